/**
 * What the Gemini API and Vertex AI providers share: Google's error bodies mapped onto ours, a POST
 * that maps them, and `:streamGenerateContent?alt=sse` read as pivot chunks.
 */
import { ChunksFromGemini } from '../../wire/gemini/chunks-from-events'
import type { ErrorBody, GenerateContentResponse } from '../../wire/gemini/types'
import type { StreamChunk } from '../../wire/pivot/types'
import { connectionLost, protocolViolation, retryAfterMs, streamError, UpstreamError, upstreamHttpError } from '../errors'
import { sendWith, transportError, UNREAD_ERROR_BODY } from '../http'
import { readSseBatches } from '../sse'
import type { AttemptContext, ProviderContext } from '../types'

/** How both Google kinds POST to a model's method: what the shared translations and the relay are built on. */
export interface GoogleCalls {
  name: string
  context: ProviderContext
  /** POSTs to `{model}:{method}` and returns the 2xx response (errors mapped). */
  post(model: string, method: string, body: string, attempt: AttemptContext, stream?: boolean): Promise<Response>
}

/** An upstream error that came with HTTP 401: Vertex AI gets a new token and tries once more. */
export class Unauthorized extends UpstreamError {}

/** Google's error body, bare or (as some Vertex AI streams answer) in a one-item array; null when it is not one. */
export function googleErrorOf(text: string): ErrorBody['error'] | null {
  try {
    const parsed = JSON.parse(text) as unknown
    const body = (Array.isArray(parsed) ? parsed[0] : parsed) as Partial<ErrorBody> | null
    const error = body?.error
    return typeof error === 'object' && error !== null && typeof error.message === 'string' ? error : null
  } catch {
    return null
  }
}

/** `google.rpc.RetryInfo`'s `retryDelay` ("44s", "1.5s") in milliseconds, when the error carries one. */
export function retryDelayMs(error: ErrorBody['error']): number | undefined {
  for (const detail of error.details ?? []) {
    if (!detail || !String(detail['@type'] ?? '').endsWith('google.rpc.RetryInfo')) continue
    const delay = /^(\d+(?:\.\d+)?)s$/.exec(String(detail.retryDelay ?? ''))
    if (delay) return Math.round(Number(delay[1]) * 1000)
  }
  return undefined
}

/** Whether Google says the key itself is bad: the Gemini API answers 400 INVALID_ARGUMENT with reason API_KEY_INVALID. */
const badKey = (error: ErrorBody['error']): boolean => (error.details ?? []).some((detail) => detail?.reason === 'API_KEY_INVALID')

/**
 * Google's `{error: {code, message, status, details}}` as what the caller sees
 * (https://cloud.google.com/apis/design/errors): RESOURCE_EXHAUSTED a 429 with the RetryInfo delay
 * as Retry-After; UNAVAILABLE a 503 worth retrying; UNAUTHENTICATED, PERMISSION_DENIED and a bad key
 * the gateway's own 502 (its credentials, not the caller's); INVALID_ARGUMENT and the other 4xx
 * relayed with their status; anything else as any upstream's error.
 */
export function googleHttpError(upstream: string, status: number, headers: Headers, text: string): UpstreamError {
  const error = googleErrorOf(text)
  const code = error?.status ?? ''
  const message = error?.message ?? ''
  if (status === 401 || code === 'UNAUTHENTICATED' || code === 'PERMISSION_DENIED' || status === 403 || (error && badKey(error))) {
    const Kind = status === 401 ? Unauthorized : UpstreamError
    // Never tried again on this target, but failed over, as for every kind (providers/errors.ts).
    return new Kind('upstream_error', `Upstream "${upstream}" rejected the gateway's credentials: ${message || `HTTP ${status}`}`, {
      retry: 'other',
      code: 'upstream_auth_failed',
    })
  }
  if (status === 429 || code === 'RESOURCE_EXHAUSTED') {
    return new UpstreamError('rate_limit_error', `Upstream "${upstream}" is rate limiting: ${message}`, {
      retry: 'same',
      code: 'upstream_rate_limited',
      retryAfterMs: (error && retryDelayMs(error)) ?? retryAfterMs(headers),
    })
  }
  if (status === 503 || code === 'UNAVAILABLE') {
    return new UpstreamError('overloaded_error', `Upstream "${upstream}" is unavailable: ${message}`, {
      retry: 'same',
      code: 'upstream_unavailable',
      retryAfterMs: (error && retryDelayMs(error)) ?? retryAfterMs(headers),
    })
  }
  // Google's message, also from a body in an array (which the generic reading does not open).
  return upstreamHttpError(upstream, status, headers, error ? JSON.stringify({ error: { message } }) : text)
}

/** POSTs a body and returns the response once its status is 2xx; anything else becomes Google's error mapped. */
const sendGoogle = sendWith((upstream, status, headers, text) => googleHttpError(upstream, status, headers, text ?? UNREAD_ERROR_BODY))

export const postGoogle = (upstream: string, url: string, headers: Record<string, string>, body: string, attempt: AttemptContext): Promise<Response> =>
  sendGoogle(upstream, 'POST', url, headers, body, attempt)

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** Whether a parsed body is a generateContent answer (or one event of its stream). */
export const isAnswer = (value: unknown): value is GenerateContentResponse =>
  isObject(value) && (Array.isArray(value.candidates) || isObject(value.promptFeedback) || isObject(value.usageMetadata))

/** One event's answer, or why it is not one: not JSON, Google's error (a failure mid-stream), or no answer at all. */
function parseEvent(upstream: string, data: string): GenerateContentResponse | UpstreamError {
  let event: unknown
  try {
    event = JSON.parse(data)
  } catch {
    return protocolViolation(upstream, 'a stream event is not valid JSON')
  }
  const error = isObject(event) && isObject(event.error) ? googleErrorOf(data) : null
  if (error) return streamError(upstream, error.message, error.status === 'UNAVAILABLE' || error.status === 'RESOURCE_EXHAUSTED')
  if (!isAnswer(event)) return protocolViolation(upstream, 'a stream event is not a generateContent answer')
  return event
}

/**
 * Google's stream as batches of pivot chunks, one per network read, through the usage chunk once the
 * body has ended. A bad event (an error, garbage) fails the attempt after every chunk before it was
 * handed on; a stream that ends before its finish reason was cut.
 */
export async function* geminiChunks(
  upstream: string,
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal,
  maxEventChars: number,
  translator: ChunksFromGemini,
): AsyncGenerator<StreamChunk[]> {
  try {
    for await (const events of readSseBatches(body, maxEventChars)) {
      const batch: StreamChunk[] = []
      for (const sse of events) {
        const event = parseEvent(upstream, sse.data)
        if (event instanceof UpstreamError) {
          if (batch.length > 0) yield batch
          throw event
        }
        try {
          batch.push(...translator.push(event))
        } catch {
          // An answer of the right outline whose parts are not (parts that are not a list...).
          if (batch.length > 0) yield batch
          throw protocolViolation(upstream, 'a stream event cannot be read')
        }
      }
      if (batch.length > 0) yield batch
    }
  } catch (error) {
    throw transportError(upstream, signal, error)
  }
  if (!translator.finished) throw connectionLost(upstream, 'the stream ended before its finish reason')
  yield [translator.end()]
}

/** An attempt of the provider's own, for a call the pipeline makes without one (a token count): its own timeout, nothing to report. */
export const ownAttempt = (timeoutMs: number): AttemptContext => ({ signal: AbortSignal.timeout(timeoutMs), responded() {} })

export const nowSeconds = () => Math.floor(Date.now() / 1000)
