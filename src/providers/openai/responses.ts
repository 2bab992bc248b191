import { connectionLost, protocolViolation } from '../errors'
import { readJson, requireEventStream, transportError, type UpstreamHeaders } from '../http'
import { readSseBatches } from '../sse'
import type { ProviderContext, ResponsesApi, ResponsesEvent } from '../types'
import type { Send } from '../http'

/** The events that end a Responses stream: after one of them the upstream sends nothing more. */
export const TERMINAL_RESPONSE_EVENTS: ReadonlySet<string> = new Set(['response.completed', 'response.failed', 'response.incomplete', 'error'])

/** An event's type: its SSE `event:` name, as OpenAI writes it, else the `type` its data says. */
function typeOf(upstream: string, event: { event: string | null; data: string }): string {
  if (event.event) return event.event
  try {
    const type = (JSON.parse(event.data) as { type?: unknown }).type
    if (typeof type === 'string') return type
  } catch {
    // Named below.
  }
  throw protocolViolation(upstream, 'a Responses stream event says no type')
}

/**
 * A Responses event stream as batches of events, as they arrive, through its terminal event (the
 * body is then read to its end, so the connection goes back to the pool). A stream that ends before
 * a terminal event was cut.
 */
async function* responseEvents(
  upstream: string,
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal,
  maxEventChars: number,
): AsyncGenerator<ResponsesEvent[]> {
  let ended = false
  try {
    for await (const events of readSseBatches(body, maxEventChars)) {
      if (ended) continue
      const batch: ResponsesEvent[] = []
      for (const event of events) {
        const type = typeOf(upstream, event)
        batch.push({ type, data: event.data })
        if (TERMINAL_RESPONSE_EVENTS.has(type)) {
          ended = true
          break
        }
      }
      if (batch.length > 0) yield batch
    }
  } catch (error) {
    throw transportError(upstream, signal, error)
  }
  if (!ended) throw connectionLost(upstream, 'the stream ended before response.completed')
}

const isResponse = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && (value as { object?: unknown }).object === 'response'

/**
 * OpenAI's own Responses API, relayed as sent: for an upstream with `responses = "native"`. `urlOf`
 * gives the URL of a path under the responses endpoint ('' for the endpoint itself, `<id>`,
 * `<id>/input_items?...`); `send` makes the call and maps its errors the kind's way.
 */
export function nativeResponsesApi(
  name: string,
  urlOf: (path: string) => string,
  headers: UpstreamHeaders,
  context: ProviderContext,
  send: Send,
): ResponsesApi {
  const { maxBodyBytes, maxSseEventChars } = context.bounds
  return {
    async create(body, attempt) {
      headers.requireSecret()
      const response = await send(name, 'POST', urlOf(''), headers.json, body, attempt)
      const { text, body: answer } = await readJson(name, response, attempt.signal, maxBodyBytes)
      if (!isResponse(answer)) throw protocolViolation(name, 'the body is not a response')
      return { text, response: answer }
    },
    async stream(body, attempt) {
      headers.requireSecret()
      const response = await send(name, 'POST', urlOf(''), headers.stream, body, attempt)
      return responseEvents(name, requireEventStream(name, response), attempt.signal, maxSseEventChars)
    },
    async call(method, path, body, attempt) {
      headers.requireSecret()
      const response = await send(name, method, urlOf(path), headers.json, body, attempt)
      return (await readJson(name, response, attempt.signal, maxBodyBytes)).text
    },
  }
}
