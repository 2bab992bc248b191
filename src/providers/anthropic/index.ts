import type { UpstreamSettings } from '../../config/file'
import { anthropicCannotServe, toChatCompletion, toMessagesRequest } from '../../wire/anthropic/chat'
import { ChunksFromAnthropic } from '../../wire/anthropic/stream'
import type { MessageResponse, StreamEvent } from '../../wire/anthropic/types'
import type { StreamChunk } from '../../wire/openai/types'
import { connectionLost, protocolViolation, UpstreamError } from '../errors'
import { endpointUrl, postJson, readJson, requireEventStream, transportError, upstreamHeaders } from '../http'
import { readSseBatches } from '../sse'
import type { Provider, ProviderContext, ProviderKind } from '../types'

const ANTHROPIC_VERSION = '2023-06-01'

const nowSeconds = () => Math.floor(Date.now() / 1000)

function isMessage(value: unknown): value is MessageResponse {
  return (
    typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'message' && Array.isArray((value as { content?: unknown }).content)
  )
}

/** Anthropic's SSE events -> batches of OpenAI chunks, through the pure translator; ends with a usage chunk. */
async function* anthropicChunks(
  upstream: string,
  translator: ChunksFromAnthropic,
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal,
  maxEventChars: number,
): AsyncGenerator<StreamChunk[]> {
  try {
    for await (const events of readSseBatches(body, maxEventChars)) {
      // After message_stop, read on to the end of the body so the connection returns to the pool.
      if (translator.stopped) continue
      const batch: StreamChunk[] = []
      for (const sse of events) {
        if (translator.stopped) break
        let event: StreamEvent
        try {
          event = JSON.parse(sse.data) as StreamEvent
        } catch {
          throw protocolViolation(upstream, 'a stream event is not valid JSON')
        }
        if (event.type === 'error') {
          if (batch.length > 0) yield batch
          const overloaded = event.error?.type === 'overloaded_error'
          throw new UpstreamError(
            502,
            'upstream_error',
            `Upstream "${upstream}" stream error: ${event.error?.message ?? 'unknown'}`,
            overloaded ? 'same' : 'other',
            'upstream_stream_error',
          )
        }
        batch.push(...translator.push(event))
      }
      if (batch.length > 0) yield batch
    }
  } catch (error) {
    throw transportError(upstream, signal, error)
  }
  if (!translator.stopped) throw connectionLost(upstream, 'the stream ended before message_stop')
}

/** Anthropic's Messages API, translated to and from OpenAI's chat completion shapes (src/wire/anthropic). */
function createAnthropicProvider(settings: UpstreamSettings, context: ProviderContext): Provider {
  const name = settings.name
  const url = endpointUrl(settings.baseUrl!, 'messages')
  const headers = upstreamHeaders(settings, context.env, (secret) => ({ 'x-api-key': secret }), { 'anthropic-version': ANTHROPIC_VERSION })

  return {
    cannotServe: anthropicCannotServe,

    async complete(request, attempt) {
      headers.requireSecret()
      const { body, shape } = toMessagesRequest({ ...request, stream: false }, request.model)
      const response = await postJson(name, url, headers.json, JSON.stringify(body), attempt)
      const { body: answer } = await readJson(name, response, attempt.signal, context.bounds.maxBodyBytes)
      if (!isMessage(answer)) throw protocolViolation(name, 'the body is not an Anthropic message')
      return { completion: toChatCompletion(answer, shape, request.model, nowSeconds()), text: null }
    },

    async stream(request, attempt) {
      headers.requireSecret()
      const { body, shape } = toMessagesRequest({ ...request, stream: true }, request.model)
      const response = await postJson(name, url, headers.stream, JSON.stringify(body), attempt)
      const translator = new ChunksFromAnthropic(shape, request.model, nowSeconds())
      return anthropicChunks(name, translator, requireEventStream(name, response), attempt.signal, context.bounds.maxSseEventChars)
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
