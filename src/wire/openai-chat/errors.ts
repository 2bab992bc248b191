import type { ErrorType, GatewayError } from '../../errors'

/**
 * OpenAI's error body: `{"error":{"message","type","param","code"}}`. `param` and `code` are always
 * there, null when there is none, as OpenAI's published OpenAPI document requires them: clients
 * generated from it refuse a body that lacks them.
 */
export interface ErrorBody {
  error: { message: string; type: ErrorType; param: string | null; code: string | null }
}

export function openaiErrorBody(error: GatewayError): ErrorBody {
  return { error: { message: error.message, type: error.type, param: error.param ?? null, code: error.code ?? null } }
}
