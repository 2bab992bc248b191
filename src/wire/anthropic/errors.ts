import type { ErrorType, GatewayError } from '../../errors'

/** Anthropic's error body: `{"type":"error","error":{"type","message"}}`; thread errors add `details.error_code`. */
export interface AnthropicErrorBody {
  type: 'error'
  error: { type: string; message: string; details?: { error_code: string } }
}

/** Our error types as Anthropic names them: the same, but for the two Anthropic calls api_error. */
const anthropicType = (type: ErrorType): string => (type === 'upstream_error' || type === 'timeout_error' ? 'api_error' : type)

/**
 * Our error as Anthropic's body. A message thread's errors carry their code in `details.error_code`,
 * as Anthropic writes them: the SDK recovers (replays the conversation) by that code alone.
 */
export const anthropicErrorBody = (error: GatewayError): AnthropicErrorBody => {
  const body: AnthropicErrorBody = { type: 'error', error: { type: anthropicType(error.type), message: error.message } }
  if (error.code?.startsWith('thread_')) body.error.details = { error_code: error.code }
  return body
}
