/** The error kinds of DESIGN.md's error table. */
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

export interface ErrorBody {
  error: { message: string; type: ErrorType; code?: string; param?: string }
}

/** The one error class: thrown anywhere, shaped into JSON by the global error handler only. */
export class GatewayError extends Error {
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    message: string,
    readonly code?: string,
    readonly param?: string,
    /** Extra response headers, e.g. Retry-After. */
    readonly headers?: Record<string, string>,
  ) {
    super(message)
    this.name = 'GatewayError'
  }

  toBody(): ErrorBody {
    const error: ErrorBody['error'] = { message: this.message, type: this.type }
    if (this.code !== undefined) error.code = this.code
    if (this.param !== undefined) error.param = this.param
    return { error }
  }
}

export const unauthorized = () => new GatewayError(401, 'authentication_error', 'Unauthorized')

/** The request itself is wrong: 400 `invalid_request_error`, naming the field when there is one. */
export const invalidRequest = (message: string, options: { param?: string; code?: string } = {}) =>
  new GatewayError(400, 'invalid_request_error', message, options.code, options.param)

/** A request no target of its alias can serve as asked: 400 naming the part or parameter. */
export interface Unsupported {
  code: 'unsupported_content' | 'unsupported_parameter'
  param: string
  message: string
}

export const unsupported = ({ code, param, message }: Unsupported) => invalidRequest(message, { code, param })
