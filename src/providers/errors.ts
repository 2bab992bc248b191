import { type ErrorType, GatewayError } from '../errors'

/**
 * What another attempt may achieve after a failure: `same` retry the same target (then others),
 * `other` only another target, `none` the caller gets this error as it is.
 */
export type RetryScope = 'same' | 'other' | 'none'

/** An upstream attempt failed; the router decides from `retry` what the caller finally sees. */
export class UpstreamError extends GatewayError {
  constructor(
    status: number,
    type: ErrorType,
    message: string,
    readonly retry: RetryScope,
    code?: string,
    headers?: Record<string, string>,
    /** Milliseconds the upstream asked us to wait (retry-after), when it said. */
    readonly retryAfterMs?: number,
  ) {
    super(status, type, message, code, undefined, headers)
    this.name = 'UpstreamError'
  }
}

export class UpstreamTimeoutError extends UpstreamError {
  constructor(upstream: string, what: string) {
    super(504, 'timeout_error', `Upstream "${upstream}" timed out (${what})`, 'same', 'upstream_timeout')
    this.name = 'UpstreamTimeoutError'
  }
}

export const connectionLost = (upstream: string, detail: string) =>
  new UpstreamError(502, 'upstream_error', `Upstream "${upstream}" connection failed: ${detail}`, 'same', 'upstream_connection_error')

export const protocolViolation = (upstream: string, detail: string) =>
  new UpstreamError(502, 'upstream_error', `Upstream "${upstream}" sent an invalid response: ${detail}`, 'same', 'upstream_invalid_response')

/** The upstream's own error message from a JSON error body (OpenAI or Anthropic shape), else a short excerpt. */
export function upstreamMessage(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown }
    if (typeof parsed.error === 'string') return parsed.error
    if (typeof parsed.error?.message === 'string') return parsed.error.message
    if (typeof parsed.message === 'string') return parsed.message
  } catch {}
  const text = body
    .replace(/<[^>]*>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
  return text.length > 200 ? `${text.slice(0, 200)}…` : text || '(empty body)'
}

/** Milliseconds from `retry-after-ms` or `retry-after` (seconds or an HTTP date). */
export function retryAfterMs(headers: Headers, now = Date.now()): number | undefined {
  const ms = headers.get('retry-after-ms')
  if (ms !== null && /^\d+(\.\d+)?$/.test(ms)) return Number(ms)
  const value = headers.get('retry-after')
  if (value === null) return undefined
  if (/^\d+(\.\d+)?$/.test(value)) return Number(value) * 1000
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/** Maps an upstream HTTP error status to what the caller sees (DESIGN.md error table). */
export function upstreamHttpError(upstream: string, status: number, headers: Headers, body: string): UpstreamError {
  const message = upstreamMessage(body)
  const wait = retryAfterMs(headers)
  if (status === 401) {
    // Our credentials for the upstream are wrong: the caller cannot fix that, so it is our 502. Like
    // any other upstream 4xx it is neither retried nor failed over.
    return new UpstreamError(502, 'upstream_error', `Upstream "${upstream}" rejected the gateway's credentials`, 'none', 'upstream_auth_failed')
  }
  if (status === 429) {
    const retryHeaders = wait !== undefined ? { 'retry-after': String(Math.max(1, Math.ceil(wait / 1000))) } : undefined
    return new UpstreamError(
      429,
      'rate_limit_error',
      `Upstream "${upstream}" is rate limiting: ${message}`,
      'same',
      'upstream_rate_limited',
      retryHeaders,
      wait,
    )
  }
  if (status >= 400 && status < 500 && status !== 408) {
    return new UpstreamError(status, 'invalid_request_error', message, 'none', 'upstream_rejected')
  }
  return new UpstreamError(
    502,
    'upstream_error',
    `Upstream "${upstream}" failed with HTTP ${status}: ${message}`,
    'same',
    'upstream_http_error',
    undefined,
    wait,
  )
}

export const notConfigured = (upstream: string, envVar: string) =>
  new UpstreamError(
    502,
    'upstream_error',
    `Upstream "${upstream}" is not configured: set the environment variable ${envVar}`,
    'other',
    'upstream_not_configured',
  )
