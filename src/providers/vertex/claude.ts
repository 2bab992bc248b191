/**
 * Claude on Vertex AI (https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude):
 * Anthropic's Messages body, without `model` (it is in the URL) and with `anthropic_version:
 * "vertex-2023-10-16"`, POSTed to `publishers/anthropic/models/{model}:rawPredict` (JSON) or
 * `:streamRawPredict` (Anthropic's event stream); token counts at `count-tokens:rawPredict`. Through
 * the pivot with the Anthropic dialect, both ways.
 */
import { toChatCompletion } from '../../wire/anthropic/answer-to-chat'
import { anthropicCannotServe, droppedFromChat } from '../../wire/anthropic/cannot-serve'
import { ChunksFromAnthropic } from '../../wire/anthropic/chunks-from-events'
import { toMessagesRequest } from '../../wire/anthropic/request-from-chat'
import type { MessageResponse, StreamEvent } from '../../wire/anthropic/types'
import type { ChatRequest, StreamChunk } from '../../wire/pivot/types'
import { connectionLost, protocolViolation, streamError, UpstreamError } from '../errors'
import { readJson, requireEventStream, transportError } from '../http'
import { readSseBatches } from '../sse'
import type { AttemptContext, Provider, ProviderContext } from '../types'
import { nowSeconds } from '../gemini/google'

export const VERTEX_ANTHROPIC_VERSION = 'vertex-2023-10-16'

/** Model names that are Claude's, served under publishers/anthropic. */
export const isClaude = (model: string): boolean => model.startsWith('claude')

/** POSTs to `publishers/anthropic/models/{model}:{method}` with the instance's token. */
export type ClaudePost = (model: string, method: string, body: string, attempt: AttemptContext, stream?: boolean) => Promise<Response>

/** The Messages body as Vertex AI takes it: no model, its own version. */
function vertexBody(request: ChatRequest, stream: boolean) {
  const { body, shape } = toMessagesRequest({ ...request, stream }, request.model)
  const { model: _, ...rest } = body
  return { text: JSON.stringify({ anthropic_version: VERTEX_ANTHROPIC_VERSION, ...rest }), shape }
}

const isMessage = (value: unknown): value is MessageResponse =>
  typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'message' && Array.isArray((value as { content?: unknown }).content)

function parseEvent(upstream: string, data: string): StreamEvent | UpstreamError {
  try {
    const event = JSON.parse(data) as StreamEvent
    if (typeof event === 'object' && event !== null && typeof event.type === 'string') return event
  } catch {}
  return protocolViolation(upstream, 'a stream event is not an Anthropic event')
}

/** Anthropic's event stream as pivot chunks, through message_stop; an error event or a cut stream fails the attempt. */
async function* claudeChunks(
  upstream: string,
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal,
  context: ProviderContext,
  translator: ChunksFromAnthropic,
): AsyncGenerator<StreamChunk[]> {
  try {
    for await (const events of readSseBatches(body, context.bounds.maxSseEventChars)) {
      if (translator.stopped) continue
      const batch: StreamChunk[] = []
      for (const sse of events) {
        const event = parseEvent(upstream, sse.data)
        if (event instanceof UpstreamError || event.type === 'error') {
          if (batch.length > 0) yield batch
          if (event instanceof UpstreamError) throw event
          throw streamError(upstream, event.error?.message ?? 'unknown', event.error?.type === 'overloaded_error')
        }
        try {
          batch.push(...translator.push(event))
        } catch {
          throw protocolViolation(upstream, `a ${event.type} event cannot be read`)
        }
      }
      if (batch.length > 0) yield batch
    }
  } catch (error) {
    throw transportError(upstream, signal, error)
  }
  if (!translator.stopped) throw connectionLost(upstream, 'the stream ended before message_stop')
}

/** Chat, streams and token counts for Claude models on one Vertex AI upstream. */
export function claudeOnVertex(
  name: string,
  context: ProviderContext,
  post: ClaudePost,
): Required<Pick<Provider, 'cannotServe' | 'dropped' | 'complete' | 'stream'>> & {
  countTokens(request: ChatRequest, attempt: AttemptContext): Promise<number>
} {
  return {
    cannotServe: anthropicCannotServe,
    dropped: droppedFromChat,
    async complete(request, attempt) {
      const { text, shape } = vertexBody(request, false)
      const response = await post(request.model, 'rawPredict', text, attempt)
      const { body } = await readJson(name, response, attempt.signal, context.bounds.maxBodyBytes)
      if (!isMessage(body)) throw protocolViolation(name, 'the body is not an Anthropic message')
      return { completion: toChatCompletion(body, shape, request.model, nowSeconds()), text: null }
    },
    async stream(request, attempt) {
      const { text, shape } = vertexBody(request, true)
      const response = await post(request.model, 'streamRawPredict', text, attempt, true)
      return claudeChunks(name, requireEventStream(name, response), attempt.signal, context, new ChunksFromAnthropic(shape, request.model, nowSeconds()))
    },
    async countTokens(request, attempt) {
      const { body } = toMessagesRequest({ ...request, stream: false }, request.model)
      const counted = { anthropic_version: VERTEX_ANTHROPIC_VERSION, model: request.model, messages: body.messages, system: body.system, tools: body.tools }
      const response = await post('count-tokens', 'rawPredict', JSON.stringify(counted), attempt)
      const { body: answer } = await readJson(name, response, attempt.signal, context.bounds.maxBodyBytes)
      const count = (answer as { input_tokens?: unknown } | null)?.input_tokens
      if (typeof count !== 'number') throw protocolViolation(name, 'the token count has no input_tokens')
      return count
    },
  }
}
