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

/**
 * The `param` and `code` of an upstream's error body in OpenAI's shape, each a string or null (null
 * too when the body is not OpenAI's): passed on to the caller with the upstream's 4xx, so a client
 * reads the field and the reason the upstream named.
 */
export function openaiErrorFields(body: string): { param: string | null; code: string | null } {
  try {
    const error = (JSON.parse(body) as { error?: { param?: unknown; code?: unknown } } | null)?.error
    return {
      param: typeof error?.param === 'string' ? error.param : null,
      code: typeof error?.code === 'string' ? error.code : null,
    }
  } catch {
    return { param: null, code: null }
  }
}
