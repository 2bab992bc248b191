/**
 * Our errors in Google's shape, on the Gemini-native routes: `{"error":{"code","message","status",
 * "details"}}` (https://cloud.google.com/apis/design/errors, google.rpc.Status), `code` the HTTP
 * status, `status` its canonical name. `details` say what Google's clients read: an ErrorInfo with our
 * code as its reason, a RetryInfo with the wait (Gemini CLI retries after it, and gives up on a wait
 * over five minutes), a BadRequest naming the field at fault.
 */
import type { ErrorType, GatewayError } from '../../errors'
import type { ErrorBody } from './types'

/** Canonical codes by HTTP status (google.rpc.Code's mapping), where the status alone says it. */
const BY_STATUS: ReadonlyMap<number, string> = new Map([
  [400, 'INVALID_ARGUMENT'],
  [401, 'UNAUTHENTICATED'],
  [403, 'PERMISSION_DENIED'],
  [404, 'NOT_FOUND'],
  [408, 'DEADLINE_EXCEEDED'],
  [409, 'ABORTED'],
  [413, 'INVALID_ARGUMENT'],
  [415, 'INVALID_ARGUMENT'],
  [426, 'FAILED_PRECONDITION'],
  [429, 'RESOURCE_EXHAUSTED'],
  [499, 'CANCELLED'],
  [500, 'INTERNAL'],
  [501, 'UNIMPLEMENTED'],
  [503, 'UNAVAILABLE'],
  [504, 'DEADLINE_EXCEEDED'],
])

/** Every other status by our kind of error: an upstream that failed is UNAVAILABLE (retryable), as Google calls a backend it cannot reach. */
const BY_TYPE: Readonly<Record<ErrorType, string>> = {
  invalid_request_error: 'INVALID_ARGUMENT',
  authentication_error: 'UNAUTHENTICATED',
  permission_error: 'PERMISSION_DENIED',
  not_found_error: 'NOT_FOUND',
  rate_limit_error: 'RESOURCE_EXHAUSTED',
  upstream_error: 'UNAVAILABLE',
  timeout_error: 'DEADLINE_EXCEEDED',
  overloaded_error: 'UNAVAILABLE',
  api_error: 'INTERNAL',
}

const STATUS_OF_TYPE: Readonly<Record<ErrorType, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  rate_limit_error: 429,
  upstream_error: 502,
  timeout_error: 504,
  overloaded_error: 503,
  api_error: 500,
}

/** The canonical status name for an error answered with `httpStatus`. */
export const statusNameOf = (error: GatewayError, httpStatus: number): string => BY_STATUS.get(httpStatus) ?? BY_TYPE[error.type]

/** Our error as Google's body; `code` is the HTTP status it is answered with (the error's own, else its kind's). */
export function googleErrorBody(error: GatewayError): ErrorBody {
  const code = error.details.status ?? STATUS_OF_TYPE[error.type]
  const details: NonNullable<ErrorBody['error']['details']> = [
    {
      '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
      reason: (error.code ?? error.type).toUpperCase(),
      domain: 'chatgate',
      metadata: { type: error.type, ...(error.param ? { param: error.param } : {}) },
    },
  ]
  if (error.details.retryAfterSeconds !== undefined)
    details.push({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${error.details.retryAfterSeconds}s` })
  if (error.param) details.push({ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: error.param, description: error.message }] })
  return { error: { code, message: error.message, status: statusNameOf(error, code), details } }
}
