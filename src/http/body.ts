import { GatewayError } from '../errors'

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i
const decoder = new TextDecoder()

/**
 * A body the gateway refused (wrong type, too large, not JSON), handed on instead of thrown: routes
 * that take a key authenticate first and only then throw its error, so a caller without a valid key
 * learns nothing about its body, and a caller with one gets its tier and rate-limit headers on it.
 */
export class RefusedBody {
  constructor(readonly error: GatewayError) {}
}

/** Throws the body's refusal, if it was refused; call once the caller is authenticated. */
export function acceptBody(body: unknown): void {
  if (body instanceof RefusedBody) throw body.error
}

/** A JSON request body: the text as sent and its parse. */
export interface JsonBody {
  text: string
  value: unknown
}

/** Reads and parses a JSON request body, refusing the wrong type, oversized bodies and bad JSON. */
export async function readJsonBody(request: Request, contentType: string, maxBytes: number): Promise<JsonBody | null> {
  // No body at all is not a wrong content type; the route's schema decides whether it needed one.
  if (!request.body) return null
  if (!JSON_TYPE.test(contentType)) {
    throw new GatewayError(415, 'invalid_request_error', `Content-Type must be application/json, got "${contentType || 'none'}"`)
  }
  const tooLarge = () => new GatewayError(413, 'invalid_request_error', `Request body is larger than ${maxBytes} bytes`)
  const length = request.headers.get('content-length')
  if (length !== null) {
    // A declared length is enforced by HTTP framing: the body cannot be longer, so read it natively.
    if (Number(length) > maxBytes) throw tooLarge()
    return parseJson(await request.text())
  }

  // A chunked body has no length to check up front: read it with a running count.
  const chunks: Uint8Array[] = []
  let size = 0
  const reader = request.body.getReader()
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > maxBytes) {
      await reader.cancel()
      throw tooLarge()
    }
    chunks.push(value)
  }
  return parseJson(chunks.length === 1 ? decoder.decode(chunks[0]) : decoder.decode(Buffer.concat(chunks)))
}

function parseJson(text: string): JsonBody {
  if (text.length === 0) throw new GatewayError(400, 'invalid_request_error', 'Request body is empty')
  try {
    return { text, value: JSON.parse(text) }
  } catch (error) {
    throw new GatewayError(400, 'invalid_request_error', `Malformed JSON body: ${(error as Error).message}`)
  }
}
