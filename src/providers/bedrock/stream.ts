/** A ConverseStream response body as batches of Converse events, then as batches of pivot chunks. */
import type { StreamChunk } from '../../wire/pivot/types'
import type { ChunksFromConverse } from '../../wire/bedrock/chunks-from-events'
import type * as Bedrock from '../../wire/bedrock/types'
import { connectionLost, protocolViolation, streamError, UpstreamError } from '../errors'
import { transportError } from '../http'
import { headerText, messageSplitter, payloadText } from './event-stream'
import type { Message } from '@smithy/core/event-streams'

/** Exceptions a stream may end with that another attempt on the same target can get past. */
const TRANSIENT = new Set([
  'throttlingException',
  'serviceUnavailableException',
  'internalServerException',
  'modelStreamErrorException',
  'modelTimeoutException',
])

/** An `exception` (or `error`) message in the stream: its type in a header, its message in the payload. */
function streamException(upstream: string, message: Message): UpstreamError {
  const type = headerText(message, ':exception-type') || headerText(message, ':error-code') || 'unknown'
  let said = headerText(message, ':error-message')
  try {
    said = String((JSON.parse(payloadText(message)) as { message?: unknown }).message ?? said)
  } catch {}
  return streamError(upstream, `${type}: ${said || 'no message'}`, TRANSIENT.has(type))
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** An event message as a Converse event, or why it is not one. */
function eventOf(upstream: string, message: Message): Bedrock.StreamEvent | UpstreamError {
  const type = headerText(message, ':event-type')
  let body: unknown
  try {
    body = JSON.parse(payloadText(message))
  } catch {
    return protocolViolation(upstream, `a ${type || 'stream'} event is not valid JSON`)
  }
  if (!type || !isObject(body)) return protocolViolation(upstream, 'a stream event has no type or no object')
  return { type, body } as unknown as Bedrock.StreamEvent
}

/**
 * The events of a ConverseStream body, in batches as bytes arrive, through its `metadata` event (the
 * body is then read to its end, so the connection goes back to the pool). An exception in the stream,
 * a message that fails its CRC or a malformed event fails the attempt, but only after every good
 * event before it was handed on; a body that ends before `metadata` was cut.
 */
export async function* converseEvents(
  upstream: string,
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal,
  maxMessageBytes: number,
): AsyncGenerator<Bedrock.StreamEvent[]> {
  const splitter = await messageSplitter(maxMessageBytes)
  let ended = false
  try {
    for await (const bytes of body) {
      if (ended) continue
      const { messages, corrupt } = splitter.push(bytes)
      const batch: Bedrock.StreamEvent[] = []
      for (const message of messages) {
        const kind = headerText(message, ':message-type')
        const event = kind === 'event' ? eventOf(upstream, message) : streamException(upstream, message)
        if (event instanceof UpstreamError) {
          if (batch.length > 0) yield batch
          throw event
        }
        batch.push(event)
        if (event.type === 'metadata') {
          ended = true
          break
        }
      }
      if (batch.length > 0) yield batch
      if (corrupt && !ended) throw protocolViolation(upstream, corrupt.message)
    }
  } catch (error) {
    throw transportError(upstream, signal, error)
  }
  if (!ended) throw connectionLost(upstream, 'the stream ended before its metadata event')
}

/** Converse events translated, batch by batch, into pivot chunks; an event the translation cannot read fails the stream after the chunks before it. */
export async function* converseChunks(
  upstream: string,
  events: AsyncGenerator<Bedrock.StreamEvent[]>,
  translator: ChunksFromConverse,
): AsyncGenerator<StreamChunk[]> {
  for await (const batch of events) {
    const chunks: StreamChunk[] = []
    for (const event of batch) {
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
