/**
 * Vertex AI (https://cloud.google.com/vertex-ai/docs/reference/rest): Gemini models on the same
 * generateContent body as the Gemini API, under
 * `projects/{project}/locations/{location}/publishers/google/models/{model}`; Claude models (names
 * starting with `claude`) under publishers/anthropic (claude.ts); embeddings through `:predict` on
 * Vertex's embedding models. Authenticated with a service account's access tokens (auth.ts); a 401
 * gets one new token and one more try, whatever `max_retries` says.
 */
import { isGeminiSignature } from '../../wire/gemini/signature'
import { isClaudeSignature } from '../../wire/pivot/gateway-signature'
import type { UpstreamSettings } from '../../config/types'
import { toGenerateContentRequest } from '../../wire/gemini/request-from-chat'
import type { PredictEmbeddingsResponse } from '../../wire/gemini/types'
import type { ChatRequest } from '../../wire/pivot/types'
import type { EmbeddingsRequest } from '../../wire/openai-embeddings/types'
import { protocolViolation } from '../errors'
import { readJson } from '../http'
import { countedTokens, generateContent, modelUrl } from '../gemini'
import { embeddingModelForChat, embeddingsAnswer, isEmbeddingModel, notEmbeddingModel, predictRequest, textInputs } from '../gemini/embeddings'
import { droppedFromChat, geminiCannotServe } from '../../wire/gemini/cannot-serve'
import { type GoogleCalls, ownAttempt, postGoogle, Unauthorized } from '../gemini/google'
import { nativeGemini, vertexCountBody } from '../gemini/native'
import type { AttemptContext, Provider, ProviderContext, ProviderKind } from '../types'
import { AccessTokens, accountProblem, readServiceAccount } from './auth'
import { claudeOnVertex, isClaude } from './claude'

/** The regional endpoint, or the global one for `location = "global"`. */
export const vertexBaseUrl = (location: string): string =>
  location === 'global' ? 'https://aiplatform.googleapis.com/v1' : `https://${location}-aiplatform.googleapis.com/v1`

/** Vertex's Gemini embedding models embed one input per request; the others take many. */
const onePerRequest = (model: string) => model.startsWith('gemini-embedding')

type VertexPost = (publisher: string, model: string, method: string, body: string, attempt: AttemptContext, stream?: boolean) => Promise<Response>

/** POSTs to a publisher's model with the instance's token; on a 401, one new token and one more try (within the same attempt). */
function vertexPoster(settings: UpstreamSettings, context: ProviderContext): VertexPost {
  const name = settings.name
  const location = settings.location!
  const base = `${settings.baseUrl ?? vertexBaseUrl(location)}/projects/${settings.project}/locations/${location}/publishers`
  const path = settings.credentialsFileEnv ? context.env[settings.credentialsFileEnv] : undefined
  const tokens = new AccessTokens(
    name,
    () => (path ? readServiceAccount(path) : `the environment variable ${settings.credentialsFileEnv} is not set`),
    settings.timeoutMs,
  )
  return async (publisher, model, method, body, attempt, stream = false) => {
    const url = modelUrl(base, `${publisher}/models/${model}:${method}`, stream)
    const send = (token: string) =>
      postGoogle(
        name,
        url,
        { 'content-type': 'application/json', accept: stream ? 'text/event-stream' : 'application/json', authorization: `Bearer ${token}` },
        body,
        attempt,
      )
    const token = await tokens.get(attempt.signal)
    try {
      return await send(token)
    } catch (error) {
      if (!(error instanceof Unauthorized)) throw error
      tokens.invalidate(token)
      return send(await tokens.get(attempt.signal))
    }
  }
}

function createVertexProvider(settings: UpstreamSettings, context: ProviderContext): Provider {
  const name = settings.name
  const post = vertexPoster(settings, context)

  const calls: GoogleCalls = { name, context, post: (model, method, body, attempt, stream) => post('google', model, method, body, attempt, stream) }
  const gemini = generateContent(calls)
  const claude = claudeOnVertex(name, context, (model, method, body, attempt, stream) => post('anthropic', model, method, body, attempt, stream))

  async function predict(request: EmbeddingsRequest, texts: string[], attempt: AttemptContext): Promise<{ vectors: number[][]; tokens: number }> {
    const response = await post('google', request.model, 'predict', JSON.stringify(predictRequest(texts, request)), attempt)
    const { body } = await readJson(name, response, attempt.signal, context.bounds.maxBodyBytes)
    const predictions = (body as Partial<PredictEmbeddingsResponse> | null)?.predictions
    if (!Array.isArray(predictions) || predictions.length !== texts.length || !predictions.every((p) => Array.isArray(p?.embeddings?.values))) {
      throw protocolViolation(name, 'the body is not one prediction per input')
    }
    return {
      vectors: predictions.map((p) => p.embeddings.values),
      tokens: predictions.reduce((sum, p) => sum + (p.embeddings.statistics?.token_count ?? 0), 0),
    }
  }

  return {
    cannotServe(request) {
      if (isClaude(request.model)) return claude.cannotServe(request)
      return isEmbeddingModel(request.model) ? embeddingModelForChat(name, request.model) : geminiCannotServe(request)
    },
    gemini: nativeGemini(calls, vertexCountBody, (model) => !isClaude(model)),
    dropped: (request) => (isClaude(request.model) ? claude.dropped(request) : droppedFromChat(request)),
    readsThinking: (signature, model) => (isClaude(model) ? isClaudeSignature(signature) : isGeminiSignature(signature)),
    complete: (request, attempt) => (isClaude(request.model) ? claude.complete(request, attempt) : gemini.complete(request, attempt)),
    stream: (request, attempt) => (isClaude(request.model) ? claude.stream(request, attempt) : gemini.stream(request, attempt)),

    /** Within the caller's attempt; without one (a caller outside the pipeline), its own, bounded by the upstream's timeout. */
    async countTokens(request: ChatRequest, attempt: AttemptContext = ownAttempt(settings.timeoutMs)) {
      if (isClaude(request.model)) return claude.countTokens(request, attempt)
      const { contents, systemInstruction, tools } = toGenerateContentRequest(request)
      const body = JSON.stringify({ contents, ...(systemInstruction ? { systemInstruction } : {}), ...(tools ? { tools } : {}) })
      return countedTokens(name, await post('google', request.model, 'countTokens', body, attempt), attempt, context.bounds.maxBodyBytes)
    },

    cannotEmbed: (model) => (isEmbeddingModel(model) ? null : notEmbeddingModel(name, model)),

    async embed(request, attempt) {
      const texts = textInputs(request)
      const batches = onePerRequest(request.model) ? texts.map((text) => [text]) : [texts]
      const answers = await Promise.all(batches.map((batch) => predict(request, batch, attempt)))
      const tokens = answers.reduce((sum, answer) => sum + answer.tokens, 0)
      return {
        answer: embeddingsAnswer(
          answers.flatMap((answer) => answer.vectors),
          request,
          tokens,
        ),
        text: null,
      }
    },
  }
}

export const vertexKind: ProviderKind = {
  kind: 'vertex',
  // The URL is worked out from `location` unless `base_url` is given.
  needsBaseUrl: false,
  defaultBaseUrl: null,
  models: null,
  fields: ['project', 'location', 'credentials_file_env'],
  check(settings, env) {
    if (!settings.project) return { field: 'project', message: 'required for kind "vertex"' }
    if (!settings.location) return { field: 'location', message: 'required for kind "vertex"' }
    // The location becomes part of a host name: a region's name, nothing else.
    if (!/^[a-z][a-z0-9-]*$/.test(settings.location)) return { field: 'location', message: `"${settings.location}" is not a Google Cloud location` }
    return accountProblem(settings, env)
  },
  create: createVertexProvider,
}
