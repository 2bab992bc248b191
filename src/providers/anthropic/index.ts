import type { UpstreamSettings } from '../../config/types'
import { toChatCompletion } from '../../wire/anthropic/answer-to-chat'
import { anthropicCannotServe, droppedFromChat } from '../../wire/anthropic/cannot-serve'
import { ChunksFromAnthropic } from '../../wire/anthropic/chunks-from-events'
import { toMessagesRequest } from '../../wire/anthropic/request-from-chat'
import type { MessageResponse, StreamEvent } from '../../wire/anthropic/types'
import type { StreamChunk } from '../../wire/pivot/types'
import { connectionLost, protocolViolation, streamError, UpstreamError } from '../errors'
import { endpointUrl, postJson, readJson, requireEventStream, transportError, upstreamHeaders } from '../http'
import { readSseBatches, type SseEvent } from '../sse'
import type { AnthropicEvent, AnthropicHeaders, MessagesApi, Provider, ProviderContext, ProviderKind } from '../types'

const ANTHROPIC_VERSION = '2023-06-01'

const nowSeconds = () => Math.floor(Date.now() / 1000)

function isMessage(value: unknown): value is MessageResponse {
  return (
    typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'message' && Array.isArray((value as { content?: unknown }).content)
  )
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** The object each event type must carry, for the relay and the translation to read it without a check. */
const REQUIRED_OBJECT: Record<string, string> = {
  message_start: 'message',
  content_block_start: 'content_block',
  content_block_delta: 'delta',
  message_delta: 'delta',
}

/** An event, or why it cannot be one: not JSON, no `type`, or without the object its type carries. */
function parseEvent(upstream: string, sse: SseEvent): StreamEvent | UpstreamError {
  let event: unknown
  try {
    event = JSON.parse(sse.data)
  } catch {
    return protocolViolation(upstream, 'a stream event is not valid JSON')
  }
  if (!isObject(event) || typeof event.type !== 'string') return protocolViolation(upstream, 'a stream event has no type')
  const required = REQUIRED_OBJECT[event.type]
  if (required !== undefined && !isObject(event[required])) return protocolViolation(upstream, `a ${event.type} event has no ${required}`)
  return event as StreamEvent
}

/**
 * An Anthropic event stream as batches of events, as they arrive, through message_stop (the body is
 * then read to its end, so the connection goes back to the pool). An `error` event fails the attempt
 * (overloaded: worth a retry), and so does a malformed event, but only after every valid event
 * before it was handed on; a stream that ends before message_stop was cut.
 */
async function* anthropicEvents(
  upstream: string,
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal,
  maxEventChars: number,
): AsyncGenerator<AnthropicEvent[]> {
  let stopped = false
  try {
    for await (const events of readSseBatches(body, maxEventChars)) {
      if (stopped) continue
      const batch: AnthropicEvent[] = []
      for (const sse of events) {
        const event = parseEvent(upstream, sse)
        if (event instanceof UpstreamError || event.type === 'error') {
          if (batch.length > 0) yield batch
          throw event instanceof UpstreamError ? event : streamError(upstream, event.error?.message ?? 'unknown', event.error?.type === 'overloaded_error')
        }
        batch.push({ data: sse.data, event })
        if (event.type === 'message_stop') {
          stopped = true
          break
        }
      }
      if (batch.length > 0) yield batch
    }
  } catch (error) {
    throw transportError(upstream, signal, error)
  }
  if (!stopped) throw connectionLost(upstream, 'the stream ended before message_stop')
}

/**
 * Anthropic's events translated, batch by batch, into OpenAI chunks (src/wire/anthropic/stream.ts).
 * An event the translation cannot read fails the stream after the chunks translated before it.
 */
async function* anthropicChunks(upstream: string, events: AsyncGenerator<AnthropicEvent[]>, translator: ChunksFromAnthropic): AsyncGenerator<StreamChunk[]> {
  for await (const batch of events) {
    const chunks: StreamChunk[] = []
    for (const { event } of batch) {
      try {
        chunks.push(...translator.push(event))
      } catch {
        if (chunks.length > 0) yield chunks
        throw protocolViolation(upstream, `a ${event.type} event cannot be read`)
      }
    }
    if (chunks.length > 0) yield chunks
  }
}

/**
 * Anthropic's Messages API: translated to and from OpenAI's chat completion shapes for chat callers
 * (src/wire/anthropic), and relayed as sent for Messages callers.
 */
function createAnthropicProvider(settings: UpstreamSettings, context: ProviderContext): Provider {
  const name = settings.name
  const url = endpointUrl(settings.baseUrl!, 'messages')
  const countUrl = endpointUrl(settings.baseUrl!, 'messages/count_tokens')
  const headers = upstreamHeaders(settings, context.env, (secret) => ({ 'x-api-key': secret }), { 'anthropic-version': ANTHROPIC_VERSION })
  const { maxBodyBytes, maxSseEventChars } = context.bounds

  /** The caller's anthropic-version and anthropic-beta go upstream with the gateway's credentials. */
  const withCaller = (base: Record<string, string>, caller: AnthropicHeaders) => {
    const out = { ...base }
    if (caller.version) out['anthropic-version'] = caller.version
    if (caller.beta) out['anthropic-beta'] = caller.beta
    return out
  }

  const messages: MessagesApi = {
    async complete(body, attempt, caller) {
      headers.requireSecret()
      const response = await postJson(name, url, withCaller(headers.json, caller), body, attempt)
      const { text, body: answer } = await readJson(name, response, attempt.signal, maxBodyBytes)
      if (!isMessage(answer)) throw protocolViolation(name, 'the body is not an Anthropic message')
      return { text, message: answer }
    },
    async stream(body, attempt, caller) {
      headers.requireSecret()
      const response = await postJson(name, url, withCaller(headers.stream, caller), body, attempt)
      return anthropicEvents(name, requireEventStream(name, response), attempt.signal, maxSseEventChars)
    },
    async countTokens(body, attempt, caller) {
      headers.requireSecret()
      const response = await postJson(name, countUrl, withCaller(headers.json, caller), body, attempt)
      const { body: answer } = await readJson(name, response, attempt.signal, maxBodyBytes)
      const count = (answer as { input_tokens?: unknown }).input_tokens
      if (typeof count !== 'number') throw protocolViolation(name, 'the token count has no input_tokens')
      return { input_tokens: count }
    },
  }

  return {
    cannotServe: anthropicCannotServe,
    dropped: droppedFromChat,
    messages,

    async complete(request, attempt) {
      headers.requireSecret()
      const { body, shape } = toMessagesRequest({ ...request, stream: false }, request.model)
      const response = await postJson(name, url, headers.json, JSON.stringify(body), attempt)
      const { body: answer } = await readJson(name, response, attempt.signal, maxBodyBytes)
      if (!isMessage(answer)) throw protocolViolation(name, 'the body is not an Anthropic message')
      return { completion: toChatCompletion(answer, shape, request.model, nowSeconds()), text: null }
    },

    async stream(request, attempt) {
      headers.requireSecret()
      const { body, shape } = toMessagesRequest({ ...request, stream: true }, request.model)
      const response = await postJson(name, url, headers.stream, JSON.stringify(body), attempt)
      const events = anthropicEvents(name, requireEventStream(name, response), attempt.signal, maxSseEventChars)
      return anthropicChunks(name, events, new ChunksFromAnthropic(shape, request.model, nowSeconds()))
    },
  }
}

export const anthropicKind: ProviderKind = {
  kind: 'anthropic',
  needsBaseUrl: true,
  defaultBaseUrl: 'https://api.anthropic.com/v1',
  models: null,
  create: createAnthropicProvider,
}
