import type { ErrorType, GatewayError } from '../../errors'

/** Anthropic's error body: `{"type":"error","error":{"type","message"}}`. */
export interface AnthropicErrorBody {
  type: 'error'
  error: { type: string; message: string }
}

/** Our error types as Anthropic names them: the same, but for the two Anthropic calls api_error. */
const anthropicType = (type: ErrorType): string => (type === 'upstream_error' || type === 'timeout_error' ? 'api_error' : type)

export const anthropicErrorBody = (error: GatewayError): AnthropicErrorBody => ({
  type: 'error',
  error: { type: anthropicType(error.type), message: error.message },
})
