import { Elysia, ValidationError } from 'elysia'
import { GatewayError, internalError, invalidRequest, notFound } from '../errors'
import { openaiErrorBody } from '../wire/openai-chat/errors'
import type { Logger } from '../log'
import { type BodyLimits, readJsonBody, RefusedBody } from './body'
import { errorHeaders, statusOf } from './errors'
import { type HeaderNames, requestIdFor } from './headers'
import type { RequestObserver } from '../observe/observer'
import { beginRequest, elapsedMs, recordOf } from '../observe/request-record'

export interface ConventionsOptions {
  headers: HeaderNames
  body: BodyLimits
  log: Logger
  observer: RequestObserver
  /** Extra headers for HTML pages, by path (their security headers). */
  pageHeaders: ReadonlyMap<string, Record<string, string>>
  /** The error format for a path (the API it belongs to decides, unknown routes included). */
  errorFormatFor(path: string): ErrorFormat
  /** A refusal decided before the body is read (a full request window), handed to the route like a refused body. */
  refuseBeforeBody?(request: Request): GatewayError | null
}

/**
 * A host name (letters, digits, `-`, `.`, and `_` as Docker service names use; a trailing dot
 * allowed) or IPv4 address, or an IPv6 literal in brackets, with an optional port. Refused: empty,
 * spaces, slashes, any other punctuation.
 */
const VALID_HOST = /^(?:[A-Za-z0-9_](?:[A-Za-z0-9._-]{0,252})?|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/

function decodable(path: string): boolean {
  try {
    decodeURIComponent(path)
    return true
  } catch {
    return false
  }
}

function validationError(error: ValidationError): GatewayError {
  const path = (error.valueError?.path ?? '').replace(/^\//, '')
  const param = path.replaceAll('/', '.') || undefined
  const reason =
    typeof error.customError === 'string'
      ? error.customError
      : error.valueError?.message === 'Expected required property'
        ? 'is required'
        : (error.valueError?.message ?? 'is invalid').replace(/^Expected/, 'expected')
  const message = typeof error.customError === 'string' ? reason : `Invalid request: ${param ?? 'body'} ${reason}`
  return invalidRequest(message, { param })
}

/** The 404 of a path no route serves: naming the method and path, and where the routes are listed. */
export const unknownRoute = (method: string, path: string) =>
  notFound(`Unknown route: ${method} ${path}. GET /swagger lists the routes this gateway serves.`, { code: 'unknown_route' })

/** Every failure, from any route or the framework itself, as a GatewayError. */
export function toGatewayError(code: string | number, error: unknown, request: { method: string; path: string }): GatewayError {
  if (error instanceof GatewayError) return error
  if (code === 'PARSE') {
    const cause = (error as Error).cause
    return cause instanceof GatewayError ? cause : invalidRequest('Malformed request body')
  }
  if (error instanceof ValidationError) {
    // A route that did not rethrow its refused body (see RefusedBody) still answers with its error.
    return error.value instanceof RefusedBody ? error.value.error : validationError(error)
  }
  if (code === 'NOT_FOUND') return unknownRoute(request.method, request.path)
  return internalError('Internal server error')
}

/** How an API writes its errors: OpenAI's `{"error":{...}}` by default, Anthropic's on the Messages routes. */
export type ErrorFormat = (error: GatewayError) => unknown

export const openaiErrorFormat: ErrorFormat = openaiErrorBody

/** The one place where an error becomes an HTTP answer: its status, headers and body. */
export const errorResponse = (error: GatewayError, format: ErrorFormat = openaiErrorFormat): Response =>
  new Response(JSON.stringify(format(error)), { status: statusOf(error), headers: errorHeaders(error) })

/**
 * The gateway's HTTP conventions, for every route: request ids, latency header, JSON bodies with a
 * size limit, and the one place where errors become `{"error":{...}}` responses.
 */
export function httpConventions({ headers, body: bodyLimits, log, observer, pageHeaders, errorFormatFor, refuseBeforeBody }: ConventionsOptions) {
  return new Elysia({ name: 'chatgate:http' })
    .onRequest(function markRequest({ request, set }) {
      const id = requestIdFor(request.headers.get('x-request-id'))
      const record = beginRequest(request, id)
      observer.begin(record, request)
      set.headers['x-request-id'] = id
      const host = request.headers.get('host')
      if (host !== null && !VALID_HOST.test(host)) throw invalidRequest('Invalid Host header', { code: 'invalid_host' })
      if (record.path.includes('%') && !decodable(record.path)) {
        throw invalidRequest('The request path is not valid percent-encoding', { code: 'invalid_path' })
      }
    })
    .onParse({ as: 'global' }, async function parseJson({ request, contentType }) {
      const early = refuseBeforeBody?.(request)
      if (early) return new RefusedBody(early)
      let body: Awaited<ReturnType<typeof readJsonBody>>
      try {
        body = await readJsonBody(request, contentType, bodyLimits)
      } catch (error) {
        if (error instanceof GatewayError) return new RefusedBody(error)
        throw error
      }
      return body === null ? null : body.value
    })
    .onAfterHandle({ as: 'global' }, function stampLatency({ request, route, set, responseValue }) {
      const record = recordOf(request)
      if (route) record.route ??= route
      // No headers left means the handler built the whole response itself (see takeHeaders).
      for (const _ in set.headers) {
        set.headers[headers.latency] = String(elapsedMs(record))
        const page = pageHeaders.get(record.path)
        if (page) Object.assign(set.headers, page)
        break
      }
      if (!record.deferred)
        observer.finish(record, responseValue instanceof Response ? responseValue.status : typeof set.status === 'number' ? set.status : 200)
    })
    .onError({ as: 'global' }, function shapeError({ code, error, request, route, set }) {
      const record = recordOf(request)
      if (route) record.route ??= route
      const gatewayError = toGatewayError(code, error, record)
      const status = statusOf(gatewayError)
      if (status >= 500 && !(error instanceof GatewayError)) {
        log.error({ err: error, request_id: record.id, path: record.path }, 'unhandled error')
      }
      set.headers[headers.latency] = String(elapsedMs(record))
      observer.finish(record, status, gatewayError)
      return errorResponse(gatewayError, errorFormatFor(record.path))
    })
}
