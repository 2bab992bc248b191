import { type GatewayError, invalidRequest } from '../errors'
import { type JsonBody, outlineJson } from '../wire/json-text'

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i
const decoder = new TextDecoder()

/**
 * A body the gateway refused (wrong type, too large, too slow, not JSON), handed on instead of
 * thrown: routes that take a key authenticate first and only then throw its error, so a caller
 * without a valid key learns nothing about its body, and a caller with one gets its tier and
 * rate-limit headers on it.
 */
export class RefusedBody {
  constructor(readonly error: GatewayError) {}
}

/** Throws the body's refusal, if it was refused; call once the caller is authenticated. */
export function acceptBody(body: unknown): void {
  if (body instanceof RefusedBody) throw body.error
}

const rawBodies = new WeakMap<Request, JsonBody>()

/** The JSON body of a request as its caller sent it (set once it is parsed), for relaying it with only the model swapped. */
export const rawBodyOf = (request: Request): JsonBody | undefined => rawBodies.get(request)

export interface BodyLimits {
  maxBytes: number
  maxDepth: number
  /** How long the body may take to arrive. */
  timeoutMs: number
}

const bodyTimeout = (ms: number) =>
  invalidRequest(`The request body did not arrive within ${ms} ms`, { code: 'body_timeout', status: 408, closeConnection: true })

interface BodyDeadline {
  at: number
  expire(): void
}

/**
 * Body reads in progress with their deadlines, checked by one shared timer: a timer per request
 * (setTimeout, clearTimeout and a race) cost more than everything else the gateway does to a body.
 */
const deadlines = new Set<BodyDeadline>()
let watchdog: Timer | null = null
const WATCHDOG_INTERVAL_MS = 250

function watch(deadline: BodyDeadline): void {
  deadlines.add(deadline)
  if (watchdog !== null) return
  watchdog = setInterval(() => {
    const now = performance.now()
    for (const entry of deadlines) if (entry.at <= now) entry.expire()
    if (deadlines.size === 0 && watchdog !== null) {
      clearInterval(watchdog)
      watchdog = null
    }
  }, WATCHDOG_INTERVAL_MS)
  watchdog.unref()
}

/** Resolves to `read`'s result, or rejects with a 408 once `ms` have passed (to within a quarter second). */
function within<T>(ms: number, read: Promise<T>, onTimeout: () => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const deadline: BodyDeadline = {
      at: performance.now() + ms,
      expire() {
        deadlines.delete(deadline)
        onTimeout()
        reject(bodyTimeout(ms))
      },
    }
    watch(deadline)
    read.then(
      (value) => {
        deadlines.delete(deadline)
        resolve(value)
      },
      (error: unknown) => {
        deadlines.delete(deadline)
        reject(error)
      },
    )
  })
}

/**
 * Reads and parses a JSON request body, refusing the wrong type, oversized or slow bodies, nesting
 * deeper than the limit (checked on the text, before any parse) and duplicate top-level keys (the
 * gateway edits top-level members in the text it relays; JSON.parse keeps the last of two, an
 * upstream's parser might keep the first).
 */
export async function readJsonBody(request: Request, contentType: string, limits: BodyLimits): Promise<JsonBody | null> {
  const body = await readBody(request, contentType, limits)
  if (body !== null) rawBodies.set(request, body)
  return body
}

async function readBody(request: Request, contentType: string, limits: BodyLimits): Promise<JsonBody | null> {
  // No body at all is not a wrong content type; the route's schema decides whether it needed one.
  if (!request.body) return null
  if (!JSON_TYPE.test(contentType)) {
    throw invalidRequest(`Content-Type must be application/json, got "${contentType || 'none'}"`, { status: 415 })
  }
  const { maxBytes } = limits
  const tooLarge = () => invalidRequest(`Request body is larger than ${maxBytes} bytes`, { status: 413 })
  const length = request.headers.get('content-length')
  if (length !== null) {
    // A declared length is enforced by HTTP framing: the body cannot be longer, so read it natively.
    if (Number(length) > maxBytes) throw tooLarge()
    return parseJson(await within(limits.timeoutMs, request.text(), () => {}), limits.maxDepth)
  }

  // A chunked body has no length to check up front: read it with a running count.
  const chunks: Uint8Array[] = []
  let size = 0
  const reader = request.body.getReader()
  const readAll = async () => {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return
      size += value.byteLength
      if (size > maxBytes) {
        await reader.cancel()
        throw tooLarge()
      }
      chunks.push(value)
    }
  }
  await within(limits.timeoutMs, readAll(), () => void reader.cancel().catch(() => {}))
  return parseJson(chunks.length === 1 ? decoder.decode(chunks[0]) : decoder.decode(Buffer.concat(chunks)), limits.maxDepth)
}

function parseJson(text: string, maxDepth: number): JsonBody {
  if (text.length === 0) throw invalidRequest('Request body is empty')
  const outline = outlineJson(text, maxDepth)
  if (outline.tooDeep) {
    throw invalidRequest(`Request body nests deeper than ${maxDepth} levels of arrays and objects`, { code: 'json_too_deep' })
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    throw invalidRequest(`Malformed JSON body: ${(error as Error).message}`)
  }
  if (outline.duplicate !== null) {
    throw invalidRequest(`Request body has the top-level key "${outline.duplicate}" more than once`, { code: 'duplicate_key', param: outline.duplicate })
  }
  return { text, value, outline }
}
