/**
 * The Gemini API (https://ai.google.dev/api/generate-content): chat, Messages and Responses callers
 * through the pivot (src/wire/gemini), embeddings through `:batchEmbedContents`, token counts through
 * `:countTokens`. The key goes in `x-goog-api-key`, never in the URL.
 */
import { isGeminiSignature } from '../../wire/gemini/signature'
import type { UpstreamSettings } from '../../config/types'
import { toChatCompletion } from '../../wire/gemini/answer-to-chat'
import { droppedFromChat, geminiCannotServe } from '../../wire/gemini/cannot-serve'
import { ChunksFromGemini } from '../../wire/gemini/chunks-from-events'
import { toGenerateContentRequest } from '../../wire/gemini/request-from-chat'
import type { BatchEmbedContentsResponse, CountTokensResponse } from '../../wire/gemini/types'
import type { ChatRequest } from '../../wire/pivot/types'
import { protocolViolation } from '../errors'
import { endpointUrl, readJson, requireEventStream, upstreamHeaders } from '../http'
import type { AttemptContext, Provider, ProviderContext, ProviderKind } from '../types'
import { batchEmbedRequest, embeddingModelForChat, embeddingsAnswer, estimatedTokens, isEmbeddingModel, notEmbeddingModel, textInputs } from './embeddings'
import { geminiChunks, type GoogleCalls, isAnswer, nowSeconds, ownAttempt, postGoogle } from './google'
import { nativeGemini } from './native'

/** `{base}/models/{model}:{method}`, and `?alt=sse` for a stream (the key never goes in the query). */
export function modelUrl(base: string, path: string, stream = false): string {
  const url = new URL(endpointUrl(base, path))
  if (stream) url.searchParams.set('alt', 'sse')
  return url.toString()
}

/** Chat (JSON and streamed) on generateContent, the same for the Gemini API and Vertex AI. */
export function generateContent(calls: GoogleCalls): Pick<Provider, 'complete' | 'stream'> {
  const { name, context } = calls
  return {
    async complete(request, attempt) {
      const response = await calls.post(request.model, 'generateContent', JSON.stringify(toGenerateContentRequest(request)), attempt)
      const { body } = await readJson(name, response, attempt.signal, context.bounds.maxBodyBytes)
      if (!isAnswer(body)) throw protocolViolation(name, 'the body is not a generateContent answer')
      try {
        return { completion: toChatCompletion(body, request.model, nowSeconds()), text: null }
      } catch {
        throw protocolViolation(name, 'the generateContent answer cannot be read')
      }
    },
    async stream(request, attempt) {
      const response = await calls.post(request.model, 'streamGenerateContent', JSON.stringify(toGenerateContentRequest(request)), attempt, true)
      const translator = new ChunksFromGemini(request.model, nowSeconds())
      return geminiChunks(name, requireEventStream(name, response), attempt.signal, context.bounds.maxSseEventChars, translator)
    },
  }
}

/** The tokens `:countTokens` reports (`totalTokens`). */
export async function countedTokens(name: string, response: Response, attempt: AttemptContext, maxBytes: number): Promise<number> {
  const { body } = await readJson(name, response, attempt.signal, maxBytes)
  const total = (body as Partial<CountTokensResponse> | null)?.totalTokens
  if (typeof total !== 'number') throw protocolViolation(name, 'the token count has no totalTokens')
  return total
}

function createGeminiProvider(settings: UpstreamSettings, context: ProviderContext): Provider {
  const name = settings.name
  const base = settings.baseUrl!
  const headers = upstreamHeaders(settings, context.env, (secret) => ({ 'x-goog-api-key': secret }))
  const calls: GoogleCalls = {
    name,
    context,
    post(model, method, body, attempt, stream = false) {
      headers.requireSecret()
      return postGoogle(name, modelUrl(base, `models/${model}:${method}`, stream), stream ? headers.stream : headers.json, body, attempt)
    },
  }

  return {
    cannotServe: (request) => (isEmbeddingModel(request.model) ? embeddingModelForChat(name, request.model) : geminiCannotServe(request)),
    dropped: droppedFromChat,
    readsThinking: isGeminiSignature,
    ...generateContent(calls),
    gemini: nativeGemini(calls),

    /** Within the caller's attempt; without one (a caller outside the pipeline), its own, bounded by the upstream's timeout. */
    async countTokens(request: ChatRequest, attempt: AttemptContext = ownAttempt(settings.timeoutMs)) {
      const { generationConfig: _, ...counted } = toGenerateContentRequest(request)
      const body = JSON.stringify({ generateContentRequest: { model: `models/${request.model}`, ...counted } })
      return countedTokens(name, await calls.post(request.model, 'countTokens', body, attempt), attempt, context.bounds.maxBodyBytes)
    },

    cannotEmbed: (model) => (isEmbeddingModel(model) ? null : notEmbeddingModel(name, model)),

    async embed(request, attempt) {
      const texts = textInputs(request)
      const response = await calls.post(request.model, 'batchEmbedContents', JSON.stringify(batchEmbedRequest(texts, request)), attempt)
      const { body } = await readJson(name, response, attempt.signal, context.bounds.maxBodyBytes)
      const answer = body as Partial<BatchEmbedContentsResponse> | null
      if (!Array.isArray(answer?.embeddings) || answer.embeddings.length !== texts.length || !answer.embeddings.every((e) => Array.isArray(e?.values))) {
        throw protocolViolation(name, 'the body is not one embedding per input')
      }
      // The Gemini API reports no usage for embeddings: an estimate stands in when it says none.
      const tokens = answer.usageMetadata?.promptTokenCount ?? estimatedTokens(texts)
      return {
        answer: embeddingsAnswer(
          answer.embeddings.map((e) => e.values),
          request,
          tokens,
        ),
        text: null,
      }
    },
  }
}

/** A set, non-empty variable named by `field`, or the problem naming it. */
export function requireVariable(
  settings: UpstreamSettings,
  env: Readonly<Record<string, string | undefined>>,
  field: string,
  variable: string | null | undefined,
): { field: string; message: string } | null {
  if (!variable) return { field, message: `required for kind "${settings.kind}"` }
  if (!env[variable]) return { field, message: `the environment variable ${variable} is not set` }
  return null
}

export const geminiKind: ProviderKind = {
  kind: 'gemini',
  needsBaseUrl: true,
  defaultBaseUrl: 'https://generativelanguage.googleapis.com/v1beta',
  models: null,
  fields: [],
  check: (settings, env) => requireVariable(settings, env, 'api_key_env', settings.apiKeyEnv),
  create: createGeminiProvider,
}
