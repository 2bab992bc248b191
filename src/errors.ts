/**
 * The gateway's one error class and its named factories. Domain code says what went wrong (a kind,
 * a message, the field); how that becomes an HTTP status and body is decided in one place,
 * src/http/errors.ts, and in the wire formats' error bodies.
 */

/** The kinds of error, as the API names them in `error.type`. */
export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'upstream_error'
  | 'timeout_error'
  | 'overloaded_error'
  | 'api_error'

export interface ErrorDetails {
  code?: string
  /** The field at fault, as a dotted path: `messages.2.content.1.type`. */
  param?: string
  /**
   * A status other than the kind's own: 408, 413 and 415 (kinds of invalid request), an upstream's
   * 4xx relayed as it came, 499 for a caller that went away.
   */
  status?: number
  /** When trying again can work, in whole seconds (Retry-After). */
  retryAfterSeconds?: number
  /** The connection should close after the answer (a body that took too long to arrive). */
  closeConnection?: boolean
}

export class GatewayError extends Error {
  constructor(
    readonly type: ErrorType,
    message: string,
    readonly details: ErrorDetails = {},
  ) {
    super(message)
    this.name = 'GatewayError'
  }

  get code(): string | undefined {
    return this.details.code
  }

  get param(): string | undefined {
    return this.details.param
  }
}

type Options = Pick<ErrorDetails, 'code' | 'param'>

/** The request itself is wrong: naming the field when there is one. */
export const invalidRequest = (message: string, options: Options & { status?: number; closeConnection?: boolean } = {}) =>
  new GatewayError('invalid_request_error', message, options)

/** Missing, unknown, revoked or expired: always the same answer, which never says which. */
export const unauthorized = () => new GatewayError('authentication_error', 'Unauthorized')

export const permissionDenied = (message: string, options: Options = {}) => new GatewayError('permission_error', message, options)

export const notFound = (message: string, options: Options = {}) => new GatewayError('not_found_error', message, options)

export const rateLimited = (message: string, options: { code: string; retryAfterSeconds: number }) => new GatewayError('rate_limit_error', message, options)

export const overloaded = (message: string, options: { code: string; retryAfterSeconds: number }) => new GatewayError('overloaded_error', message, options)

/** Something the gateway itself got wrong. */
export const internalError = (message: string) => new GatewayError('api_error', message)

/** The caller went away: nothing more is owed to it. */
export const clientClosed = () => new GatewayError('api_error', 'Client closed the request', { code: 'client_closed', status: 499 })

/** A request made for a protocol the route does not speak (a WebSocket upgrade where SSE is served): 426. */
export const upgradeRequired = (message: string) => invalidRequest(message, { code: 'upgrade_required', status: 426 })

/** A config file or environment variable that does not validate, naming the field. */
export const invalidConfig = (message: string, field: string) => invalidRequest(message, { code: 'invalid_config', param: field })

/** A request no target of its alias can serve as asked: naming the part or parameter. */
export interface Unsupported {
  code: 'unsupported_content' | 'unsupported_parameter'
  param: string
  message: string
}

export const unsupported = ({ code, param, message }: Unsupported) => invalidRequest(message, { code, param })
