import { GatewayError } from '../errors'
import type { UpstreamSettings } from '../config/types'
import { connectionLost, notConfigured, protocolViolation, upstreamHttpError } from './errors'
import { SseEventTooLarge } from './sse'
import type { AttemptContext, ProviderContext } from './types'

/** What went wrong on the wire, in words, from the runtime's error code; never its message. */
const TRANSPORT_FAILURES = new Map([
  ['ConnectionRefused', 'connection refused'],
  ['ECONNREFUSED', 'connection refused'],
  ['ConnectionClosed', 'the connection closed early'],
  ['ECONNRESET', 'the connection was reset'],
  ['FailedToOpenSocket', 'could not open a connection'],
  ['ENOTFOUND', 'the host name did not resolve'],
  ['DNSError', 'the host name did not resolve'],
  ['ETIMEDOUT', 'the connection timed out'],
  ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'its TLS certificate could not be verified'],
  ['CERT_HAS_EXPIRED', 'its TLS certificate has expired'],
])

/**
 * A failed fetch or body read: our own abort reason (timeout) if we aborted, a protocol violation
 * for an event past its cap, else a lost connection. The runtime's message is never passed on: it
 * can hold the upstream's URL, and a URL can hold a credential.
 */
export function transportError(upstream: string, signal: AbortSignal, error: unknown): GatewayError {
  if (signal.aborted && signal.reason instanceof GatewayError) return signal.reason
  if (error instanceof GatewayError) return error
  if (error instanceof SseEventTooLarge) return protocolViolation(upstream, error.message)
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code === 'string' && /zlib|brotli|zstd|decompress/i.test(code))
    return protocolViolation(upstream, 'the body does not decode with its content-encoding')
  const known = typeof code === 'string' ? TRANSPORT_FAILURES.get(code) : undefined
  return connectionLost(upstream, known ?? (typeof code === 'string' && /^[A-Za-z_]{1,40}$/.test(code) ? `network error ${code}` : 'network error'))
}

/** An upstream error body is read for its message only: this much is plenty. */
const MAX_ERROR_BODY_BYTES = 65_536

/**
 * A response body as text, at most `maxBytes` of it, else null. A declared Content-Length over the
 * cap is refused before anything is read; within it, HTTP framing bounds the body, so it is read
 * natively. A chunked body is read with a running count and cancelled once past the cap.
 */
async function boundedText(response: Response, maxBytes: number): Promise<string | null> {
  const length = response.headers.get('content-length')
  if (length !== null && Number(length) > maxBytes) {
    await response.body?.cancel().catch(() => {})
    return null
  }
  if (length !== null || !response.body) return await response.text()
  const reader = response.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > maxBytes) {
      await reader.cancel().catch(() => {})
      return null
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** The request headers with the attempt's trace context added, when it has one (tracing on). */
export const withTrace = (headers: Record<string, string>, attempt: AttemptContext): Record<string, string> =>
  attempt.trace === undefined ? headers : { ...headers, ...attempt.trace }

/**
 * An error response (status, headers, up to 64 KiB of its body's text: null when the body is longer)
 * as the gateway's error: each kind maps its own way (Google's error shape, Azure's content filter,
 * Bedrock's x-amzn-ErrorType), the openai kind with the generic `upstreamHttpError`.
 */
export type ErrorMapping = (upstream: string, status: number, headers: Headers, text: string | null) => GatewayError

/** Sends one request (a GET or DELETE has no body) and returns the response once its status is 2xx. */
export type Send = (
  upstream: string,
  method: 'GET' | 'POST' | 'DELETE',
  url: string,
  headers: Record<string, string>,
  body: string | null,
  attempt: AttemptContext,
) => Promise<Response>

/** A sender that returns the response once its status is 2xx, and maps anything else with `mapError`. */
export function sendWith(mapError: ErrorMapping): Send {
  return async (upstream, method, url, headers, body, attempt) => {
    let response: Response
    try {
      response = await fetch(url, { method, headers: withTrace(headers, attempt), body, signal: attempt.signal })
    } catch (error) {
      throw transportError(upstream, attempt.signal, error)
    }
    attempt.responded()
    if (response.ok) return response
    let text: string | null
    try {
      text = await boundedText(response, MAX_ERROR_BODY_BYTES)
    } catch (error) {
      throw transportError(upstream, attempt.signal, error)
    }
    throw mapError(upstream, response.status, response.headers, text)
  }
}

/** What an error body too large to read is quoted as. */
export const UNREAD_ERROR_BODY = '(an error body too large to read)'

/** The generic sender: any non-2xx answer becomes an UpstreamError from its status and body. */
export const sendRequest: Send = sendWith((upstream, status, headers, text) => upstreamHttpError(upstream, status, headers, text ?? UNREAD_ERROR_BODY))

/** POSTs JSON with the generic sender. */
export const postJson = (upstream: string, url: string, headers: Record<string, string>, body: string, attempt: AttemptContext): Promise<Response> =>
  sendRequest(upstream, 'POST', url, headers, body, attempt)

/**
 * Reads a whole JSON body of at most `maxBytes`, telling a broken connection from garbage; returns
 * the text and its parse. A longer body is an invalid response: it is not read on.
 */
export async function readJson(upstream: string, response: Response, signal: AbortSignal, maxBytes: number): Promise<{ text: string; body: unknown }> {
  const type = response.headers.get('content-type') ?? ''
  let text: string | null
  try {
    text = await boundedText(response, maxBytes)
  } catch (error) {
    throw transportError(upstream, signal, error)
  }
  if (text === null) throw protocolViolation(upstream, `the body is larger than ${maxBytes} bytes`)
  if (!type.includes('json')) throw protocolViolation(upstream, `expected JSON, got "${type || 'no content type'}"`)
  try {
    return { text, body: JSON.parse(text) }
  } catch {
    throw protocolViolation(upstream, 'the body is not valid JSON')
  }
}

export function requireEventStream(upstream: string, response: Response): ReadableStream<Uint8Array> {
  const type = response.headers.get('content-type') ?? ''
  if (!type.includes('text/event-stream') || !response.body) {
    throw protocolViolation(upstream, `expected an event stream, got "${type || 'no content type'}"`)
  }
  return response.body
}

/**
 * The URL of an endpoint under a base URL: `path` is appended to the base's path, and anything
 * else the base carries (a query string some providers authenticate with) is kept.
 */
export function endpointUrl(baseUrl: string, path: string): string {
  const url = new URL(baseUrl)
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/${path}`
  return url.toString()
}

export interface UpstreamHeaders {
  json: Record<string, string>
  stream: Record<string, string>
  /** Throws `upstream_not_configured` when the key variable the config names is not set. */
  requireSecret(): void
}

/** Request headers for an HTTP upstream, its secret (read once, from the variable the config names) included. */
export function upstreamHeaders(
  settings: UpstreamSettings,
  env: ProviderContext['env'],
  credentials: (secret: string) => Record<string, string>,
  extra: Record<string, string> = {},
): UpstreamHeaders {
  const secret = settings.apiKeyEnv ? env[settings.apiKeyEnv] : undefined
  const json = { 'content-type': 'application/json', accept: 'application/json', ...extra, ...(secret ? credentials(secret) : {}) }
  return {
    json,
    stream: { ...json, accept: 'text/event-stream' },
    requireSecret() {
      if (settings.apiKeyEnv && !secret) throw notConfigured(settings.name, settings.apiKeyEnv)
    },
  }
}
