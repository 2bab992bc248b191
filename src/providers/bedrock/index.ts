import type { UpstreamSettings } from '../../config/types'
import { isClaudeSignature } from '../../wire/pivot/gateway-signature'
import { toChatCompletion } from '../../wire/bedrock/answer-to-chat'
import { bedrockCannotServe, droppedForBedrock } from '../../wire/bedrock/cannot-serve'
import { ChunksFromConverse } from '../../wire/bedrock/chunks-from-events'
import { isClaude } from '../../wire/bedrock/common'
import { toConverseRequest, toCountTokensRequest } from '../../wire/bedrock/request-from-chat'
import type { ConverseResponse } from '../../wire/bedrock/types'
import type { ChatRequest } from '../../wire/pivot/types'
import { protocolViolation, UpstreamError } from '../errors'
import { readJson } from '../http'
import { countChatTokens } from '../openai/tokens'
import type { AttemptContext, Provider, ProviderContext, ProviderKind } from '../types'
import { bedrockAuth } from './auth'
import { bedrockEmbed, cannotEmbed, isEmbeddingModel } from './embeddings'
import { sendBedrock } from './send'
import { converseChunks, converseEvents } from './stream'

const EVENT_STREAM = 'application/vnd.amazon.eventstream'
const nowSeconds = () => Math.floor(Date.now() / 1000)

function isConverse(value: unknown): value is ConverseResponse {
  const output = (value as { output?: { message?: { content?: unknown } } } | null)?.output
  return typeof value === 'object' && value !== null && Array.isArray(output?.message?.content)
}

/** A completion id: Converse answers have none of their own, so Bedrock's request id stands in. */
const completionId = (response: Response) => `chatcmpl-${response.headers.get('x-amzn-requestid') ?? crypto.randomUUID()}`

/** Cross-region inference profiles (`us.`, `eu.`, `apac.`, `global.`) count like their model: CountTokens takes the model. */
const baseModel = (modelId: string) => modelId.replace(/^(us|eu|apac|jp|au|ca|us-gov|global)\./, '')

/** An attempt for a call made without one (a token count): bounded by the upstream's own timeout. */
const ownAttempt = (timeoutMs: number): AttemptContext => ({ signal: AbortSignal.timeout(timeoutMs), responded: () => {} })

/** Bedrock's Converse API: every inbound dialect reaches it through the pivot (src/wire/bedrock). */
function createBedrockProvider(settings: UpstreamSettings, context: ProviderContext): Provider {
  const name = settings.name
  const base = settings.baseUrl ?? `https://bedrock-runtime.${settings.region}.amazonaws.com`
  const auth = bedrockAuth(settings, context.env)
  const { maxBodyBytes, maxSseEventChars } = context.bounds
  // The model id is one path segment: its `:` (and an ARN's `/`) percent-encoded, as AWS's SDKs send it.
  const url = (modelId: string, operation: string) => new URL(`${base}/model/${encodeURIComponent(modelId)}/${operation}`)
  const post = async (target: URL, body: string, accept: string, attempt: AttemptContext) =>
    sendBedrock(name, 'POST', target.toString(), await auth.headers(target, body, accept), body, attempt)

  async function countRemote(request: ChatRequest, attempt: AttemptContext): Promise<number> {
    const body = JSON.stringify(toCountTokensRequest(toConverseRequest(request, request.model)))
    const response = await post(url(baseModel(request.model), 'count-tokens'), body, 'application/json', attempt)
    const count = ((await readJson(name, response, attempt.signal, maxBodyBytes)).body as { inputTokens?: unknown }).inputTokens
    if (typeof count !== 'number') throw protocolViolation(name, 'the token count has no inputTokens')
    return count
  }

  return {
    cannotServe: (request) =>
      isEmbeddingModel(request.model)
        ? { code: 'unsupported_parameter', param: 'model', message: `Bedrock model "${request.model}" makes embeddings, not chat` }
        : bedrockCannotServe(request),
    dropped: droppedForBedrock,
    readsThinking: (signature, model) => isClaude(model) && isClaudeSignature(signature),

    async complete(request, attempt) {
      const body = JSON.stringify(toConverseRequest(request, request.model))
      const response = await post(url(request.model, 'converse'), body, 'application/json', attempt)
      const { body: answer } = await readJson(name, response, attempt.signal, maxBodyBytes)
      if (!isConverse(answer)) throw protocolViolation(name, 'the body is not a Converse answer')
      return { completion: toChatCompletion(answer, completionId(response), request.model, nowSeconds()), text: null }
    },

    async stream(request, attempt) {
      const body = JSON.stringify(toConverseRequest(request, request.model))
      const response = await post(url(request.model, 'converse-stream'), body, EVENT_STREAM, attempt)
      const type = response.headers.get('content-type') ?? ''
      if (!type.includes(EVENT_STREAM) || !response.body) throw protocolViolation(name, `expected an event stream, got "${type || 'no content type'}"`)
      const events = converseEvents(name, response.body, attempt.signal, maxSseEventChars)
      return converseChunks(name, events, new ChunksFromConverse(completionId(response), request.model, nowSeconds()))
    },

    /**
     * Claude's tokens through Bedrock's CountTokens; other models (and a Claude model CountTokens
     * refuses) with the local tokenizer, an estimate.
     */
    async countTokens(request: ChatRequest, attempt?: AttemptContext) {
      if (!isClaude(request.model)) return countChatTokens(request)
      try {
        return await countRemote(request, attempt ?? ownAttempt(settings.timeoutMs))
      } catch (error) {
        if (error instanceof UpstreamError && error.code === 'upstream_rejected') return countChatTokens(request)
        throw error
      }
    },

    cannotEmbed,
    embed: (request, attempt) =>
      bedrockEmbed(name, request, (body, inner) => post(url(request.model, 'invoke'), body, 'application/json', inner), attempt, maxBodyBytes),
  }
}

/** What the config needs for a Bedrock upstream: a region, and one way to authenticate whose variables are set. */
function checkBedrock(settings: UpstreamSettings, env: Readonly<Record<string, string | undefined>>): { field: string; message: string } | null {
  if (!settings.region) return { field: 'region', message: 'required for kind "bedrock" (e.g. "us-east-1")' }
  const keys = settings.accessKeyIdEnv !== undefined || settings.secretAccessKeyEnv !== undefined || settings.sessionTokenEnv !== undefined
  if (settings.apiKeyEnv) {
    if (keys)
      return { field: 'api_key_env', message: 'either api_key_env (a Bedrock API key) or access_key_id_env and secret_access_key_env (SigV4), not both' }
    return env[settings.apiKeyEnv] ? null : { field: 'api_key_env', message: `the environment variable ${settings.apiKeyEnv} is not set` }
  }
  const needed: [string, string | undefined][] = [
    ['access_key_id_env', settings.accessKeyIdEnv],
    ['secret_access_key_env', settings.secretAccessKeyEnv],
  ]
  for (const [field, variable] of needed) {
    if (!variable) return { field, message: 'required for kind "bedrock" (or api_key_env for a Bedrock API key)' }
    if (!env[variable]) return { field, message: `the environment variable ${variable} is not set` }
  }
  if (settings.sessionTokenEnv && !env[settings.sessionTokenEnv]) {
    return { field: 'session_token_env', message: `the environment variable ${settings.sessionTokenEnv} is not set` }
  }
  return null
}

export const bedrockKind: ProviderKind = {
  kind: 'bedrock',
  needsBaseUrl: false,
  defaultBaseUrl: null,
  models: null,
  fields: ['region', 'access_key_id_env', 'secret_access_key_env', 'session_token_env'],
  check: checkBedrock,
  create: createBedrockProvider,
}
