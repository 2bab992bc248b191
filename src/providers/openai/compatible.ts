/**
 * What every OpenAI-shaped upstream does with a request (the openai kind, and Azure OpenAI): the
 * caller's own text with only the model replaced (and, for a stream, the usage chunk asked for), its
 * answer and chunks relayed as the upstream wrote them, embeddings the same way. Where the requests
 * go, how they are authenticated and how errors read are the kind's.
 */
import type { ChatCompletion, StreamChunk } from '../../wire/pivot/types'
import { upstreamBody } from '../../wire/openai-chat/request'
import type { EmbeddingsResponse } from '../../wire/openai-embeddings/types'
import { connectionLost, protocolViolation, type UpstreamError } from '../errors'
import { readJson, requireEventStream, transportError, type UpstreamHeaders } from '../http'
import { readSseBatches } from '../sse'
import type { Provider, ProviderContext } from '../types'
import type { Send } from '../http'
import { countChatTokens } from './tokens'

function isEmbeddings(value: unknown): value is EmbeddingsResponse {
  return typeof value === 'object' && value !== null && Array.isArray((value as EmbeddingsResponse).data)
}

function isCompletion(value: unknown): value is ChatCompletion {
  return typeof value === 'object' && value !== null && Array.isArray((value as ChatCompletion).choices)
}

/** Whether `text` looks like one JSON object: `{` first and `}` last, blanks aside. Cheap enough for every chunk. */
function objectShaped(text: string): boolean {
  let start = 0
  let end = text.length - 1
  while (start <= end && text.charCodeAt(start) <= 32) start++
  while (end >= start && text.charCodeAt(end) <= 32) end--
  return text.charCodeAt(start) === 123 && text.charCodeAt(end) === 125
}

/**
 * Why an event cannot be relayed, or null. A chunk is checked only for its shape (no parse and
 * re-encode per chunk); one that may carry an error is parsed to tell.
 */
function badEvent(upstream: string, data: string): UpstreamError | null {
  if (!objectShaped(data)) return protocolViolation(upstream, 'a stream event is not valid JSON')
  if (!data.includes('"error"')) return null
  let parsed: { error?: { message?: string } }
  try {
    parsed = JSON.parse(data) as typeof parsed
  } catch {
    return protocolViolation(upstream, 'a stream event is not valid JSON')
  }
  return parsed.error ? protocolViolation(upstream, `stream error: ${parsed.error.message ?? 'unknown'}`) : null
}

/**
 * Relays the upstream's chunks as the JSON text it sent, in batches as they arrive. Ends at [DONE].
 * A bad event fails the attempt, but only after every valid chunk before it was handed on: the
 * caller gets what the upstream sent well, then the error event.
 */
async function* openaiChunks(upstream: string, body: ReadableStream<Uint8Array>, signal: AbortSignal, maxEventChars: number): AsyncGenerator<StreamChunk[]> {
  let done = false
  try {
    for await (const events of readSseBatches(body, maxEventChars)) {
      // After [DONE], read on to the end of the body: an unread body keeps its connection out of
      // the keep-alive pool, and every stream would then pay for a new connection.
      if (done) continue
      const batch: StreamChunk[] = []
      for (const event of events) {
        if (event.data === '[DONE]') {
          done = true
          break
        }
        const bad = badEvent(upstream, event.data)
        if (bad !== null) {
          if (batch.length > 0) yield batch
          throw bad
        }
        batch.push({ data: event.data })
      }
      if (batch.length > 0) yield batch
    }
  } catch (error) {
    throw transportError(upstream, signal, error)
  }
  // An OpenAI stream always ends with [DONE]; without it the answer is cut, whatever came before.
  if (!done) throw connectionLost(upstream, 'the stream ended before [DONE]')
}

/** Where an OpenAI-shaped upstream takes each request, by the target's model (Azure's deployments are in the path). */
export interface OpenAIEndpoints {
  chat(model: string): string
  embeddings(model: string): string
}

/** Chat completions (JSON and streamed), embeddings and local token counts for an OpenAI-shaped upstream. */
export function openaiCompatible(
  name: string,
  context: ProviderContext,
  headers: UpstreamHeaders,
  endpoints: OpenAIEndpoints,
  send: Send,
): Pick<Provider, 'complete' | 'stream' | 'countTokens' | 'embed'> {
  return {
    async complete(request, attempt, caller) {
      headers.requireSecret()
      const json = caller ? upstreamBody(caller.text, caller.outline, request.model, false) : JSON.stringify(request)
      const response = await send(name, 'POST', endpoints.chat(request.model), headers.json, json, attempt)
      const { text, body } = await readJson(name, response, attempt.signal, context.bounds.maxBodyBytes)
      if (!isCompletion(body)) throw protocolViolation(name, 'the body is not a chat completion')
      return { completion: body, text }
    },

    async stream(request, attempt, caller) {
      headers.requireSecret()
      // Always ask for the usage chunk: usage must be exact even when the caller did not ask for it.
      const json = caller
        ? upstreamBody(caller.text, caller.outline, request.model, true)
        : JSON.stringify({ ...request, stream: true, stream_options: { ...(request.stream_options ?? {}), include_usage: true } })
      const response = await send(name, 'POST', endpoints.chat(request.model), headers.stream, json, attempt)
      return openaiChunks(name, requireEventStream(name, response), attempt.signal, context.bounds.maxSseEventChars)
    },

    countTokens: countChatTokens,

    async embed(request, attempt, caller) {
      headers.requireSecret()
      const json = caller ? upstreamBody(caller.text, caller.outline, request.model, false) : JSON.stringify(request)
      const response = await send(name, 'POST', endpoints.embeddings(request.model), headers.json, json, attempt)
      const { text, body } = await readJson(name, response, attempt.signal, context.bounds.maxBodyBytes)
      if (!isEmbeddings(body)) throw protocolViolation(name, 'the body is not an embeddings list')
      return { answer: body, text }
    },
  }
}
