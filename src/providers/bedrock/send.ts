/**
 * One HTTP call to Bedrock, and its errors as the gateway's. Bedrock names each error in the
 * `x-amzn-ErrorType` header (`ThrottlingException:http://internal.amazon.com/...`) and says why in
 * the body's `message`; the statuses are those of the Converse reference's Errors section.
 */
import { UpstreamError, retryAfterMs, upstreamHttpError } from '../errors'
import { sendWith } from '../http'

/** Errors that say our credentials are wrong or lack a permission: not the caller's fault, and the same target will not change its mind. */
const AUTH_ERRORS = new Set([
  'AccessDeniedException',
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'IncompleteSignatureException',
  'MissingAuthenticationTokenException',
  'ExpiredTokenException',
  'InvalidClientTokenId',
])

/** Errors worth another attempt on the same target (after a backoff). */
const RETRYABLE = new Set(['ModelNotReadyException', 'ServiceUnavailableException', 'InternalServerException', 'ModelTimeoutException', 'ModelErrorException'])

/** Without a retry hint, a throttled caller is told to come back in a second: Bedrock's quotas are per minute, refilled continuously. */
const DEFAULT_THROTTLE_WAIT_MS = 1000

/** The error's name: the header's first part, else the body's `__type` (`com.amazon...#ValidationException`). */
function errorType(headers: Headers, body: Record<string, unknown>): string {
  const header = headers.get('x-amzn-errortype')
  if (header) return header.split(':')[0]!.trim()
  const type = typeof body.__type === 'string' ? body.__type : ''
  return type.split('#').at(-1) ?? ''
}

function parsed(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text) as unknown
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}

/** A Bedrock error response as the gateway's error (see docs/providers/bedrock.md, "Errors"). */
export function bedrockError(upstream: string, status: number, headers: Headers, text: string): UpstreamError {
  const body = parsed(text)
  const type = errorType(headers, body)
  const said = typeof body.message === 'string' ? body.message : typeof body.Message === 'string' ? body.Message : ''
  const message = said || `HTTP ${status}`
  if (AUTH_ERRORS.has(type) || status === 401 || status === 403) {
    // Another target may hold good credentials: fail over, but never retry this one.
    return new UpstreamError('upstream_error', `Upstream "${upstream}" rejected the gateway's credentials (${type || status}: ${message})`, {
      retry: 'other',
      code: 'upstream_auth_failed',
    })
  }
  if (type === 'ThrottlingException') {
    return new UpstreamError('rate_limit_error', `Upstream "${upstream}" is rate limiting: ${message}`, {
      retry: 'same',
      code: 'upstream_rate_limited',
      retryAfterMs: retryAfterMs(headers) ?? DEFAULT_THROTTLE_WAIT_MS,
    })
  }
  if (RETRYABLE.has(type)) {
    return new UpstreamError('upstream_error', `Upstream "${upstream}" failed with ${type}: ${message}`, {
      retry: 'same',
      code: 'upstream_http_error',
      retryAfterMs: retryAfterMs(headers),
    })
  }
  if (type === 'ValidationException') return new UpstreamError('invalid_request_error', message, { retry: 'none', code: 'upstream_rejected', status: 400 })
  return upstreamHttpError(upstream, status, headers, text)
}

/** POSTs a body to Bedrock; a non-2xx answer becomes the gateway's error (bedrockError). */
export const sendBedrock = sendWith((upstream, status, headers, text) => bedrockError(upstream, status, headers, text ?? ''))
