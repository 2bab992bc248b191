import { type ErrorType, GatewayError } from '../errors'
import { openaiErrorFields } from '../wire/openai-chat/errors'
import { rateLimitResetMs } from './rate-limit-reset'

/**
 * What another attempt may achieve after a failure: `same` retry the same target (then others),
 * `other` only another target, `none` the caller gets this error as it is.
 */
export type RetryScope = 'same' | 'other' | 'none'

export interface UpstreamErrorOptions {
  /** What another attempt may achieve. */
  retry: RetryScope
  code: string
  /** The field the upstream named (its 4xx, relayed). */
  param?: string
  /** The upstream's own 4xx, relayed as it came. */
  status?: number
  /** Milliseconds the upstream asked us to wait (retry-after), when it said. */
  retryAfterMs?: number
}

/** An upstream attempt failed; the router decides from `retry` what the caller finally sees. */
export class UpstreamError extends GatewayError {
  readonly retry: RetryScope
  readonly retryAfterMs: number | undefined

  constructor(type: ErrorType, message: string, options: UpstreamErrorOptions) {
    const retryAfterSeconds =
      options.retryAfterMs === undefined || type !== 'rate_limit_error' ? undefined : Math.max(1, Math.ceil(options.retryAfterMs / 1000))
    super(type, message, { code: options.code, param: options.param, status: options.status, retryAfterSeconds })
    this.name = 'UpstreamError'
    this.retry = options.retry
    this.retryAfterMs = options.retryAfterMs
  }
}

export const upstreamTimeout = (upstream: string, what: string) =>
  new UpstreamError('timeout_error', `Upstream "${upstream}" timed out (${what})`, { retry: 'same', code: 'upstream_timeout' })

export const connectionLost = (upstream: string, detail: string) =>
  new UpstreamError('upstream_error', `Upstream "${upstream}" connection failed: ${detail}`, { retry: 'same', code: 'upstream_connection_error' })

export const protocolViolation = (upstream: string, detail: string) =>
  new UpstreamError('upstream_error', `Upstream "${upstream}" sent an invalid response: ${detail}`, { retry: 'same', code: 'upstream_invalid_response' })

/** An error event in the middle of an upstream's stream; overloaded is worth another attempt. */
export const streamError = (upstream: string, message: string, overloaded: boolean) =>
  new UpstreamError('upstream_error', `Upstream "${upstream}" stream error: ${message}`, {
    retry: overloaded ? 'same' : 'other',
    code: 'upstream_stream_error',
  })

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
  if (status === 401 || status === 403) {
    // Our credentials for the upstream are wrong or lack access: the caller cannot fix that, so it is
    // our 502. Never tried again on the same target (the same key fails the same way), but the next
    // target may hold other credentials; every kind maps it alike. The upstream's message is not
    // passed on: OpenAI's names part of the key.
    return new UpstreamError('upstream_error', `Upstream "${upstream}" rejected the gateway's credentials (HTTP ${status})`, {
      retry: 'other',
      code: 'upstream_auth_failed',
    })
  }
  if (status === 429) {
    return new UpstreamError('rate_limit_error', `Upstream "${upstream}" is rate limiting: ${message}`, {
      retry: 'same',
      code: 'upstream_rate_limited',
      retryAfterMs: wait ?? rateLimitResetMs(headers),
    })
  }
  if (status >= 400 && status < 500 && status !== 408) {
    // OpenAI's own param and code go on to the caller; without a code of its own, ours says where it came from.
    const { param, code } = openaiErrorFields(body)
    return new UpstreamError('invalid_request_error', message, { retry: 'none', code: code ?? 'upstream_rejected', param: param ?? undefined, status })
  }
  return new UpstreamError('upstream_error', `Upstream "${upstream}" failed with HTTP ${status}: ${message}`, {
    retry: 'same',
    code: 'upstream_http_error',
    retryAfterMs: wait,
  })
}

export const notConfigured = (upstream: string, envVar: string) =>
  new UpstreamError('upstream_error', `Upstream "${upstream}" is not configured: set the environment variable ${envVar}`, {
    retry: 'other',
    code: 'upstream_not_configured',
  })
