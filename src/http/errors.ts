import type { ErrorType, GatewayError } from '../errors'

/** Each kind of error's HTTP status, unless the error names another (see ErrorDetails.status). */
const STATUS: Readonly<Record<ErrorType, number>> = {
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

/** The one place where an error becomes an HTTP status. */
export const statusOf = (error: GatewayError): number => error.details.status ?? STATUS[error.type]

/** The headers an error's answer carries: Retry-After, and Connection: close when the connection must go. */
export function errorHeaders(error: GatewayError): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (error.details.retryAfterSeconds !== undefined) headers['retry-after'] = String(error.details.retryAfterSeconds)
  if (error.details.closeConnection) headers.connection = 'close'
  return headers
}
