import type { ErrorType, GatewayError } from '../../errors'

/** OpenAI's error body: `{"error":{"message","type","code"?,"param"?}}`. */
export interface ErrorBody {
  error: { message: string; type: ErrorType; code?: string; param?: string }
}

export function openaiErrorBody(error: GatewayError): ErrorBody {
  const body: ErrorBody['error'] = { message: error.message, type: error.type }
  if (error.code !== undefined) body.code = error.code
  if (error.param !== undefined) body.param = error.param
  return { error: body }
}
