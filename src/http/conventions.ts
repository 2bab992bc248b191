import { Elysia, ValidationError } from 'elysia'
import { type ErrorBody, GatewayError } from '../errors'
import type { Logger } from '../log'
import { readJsonBody, RefusedBody } from './body'
import { type HeaderNames, requestIdFor } from './headers'
import type { RequestObserver } from './observer'
import { beginRequest, elapsedMs, recordOf } from './request-record'

export interface ConventionsOptions {
  headers: HeaderNames
  maxBodyBytes: number
  log: Logger
  observer: RequestObserver
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
  return new GatewayError(400, 'invalid_request_error', message, undefined, param)
}

/** Every failure, from any route or the framework itself, as a GatewayError. */
export function toGatewayError(code: string | number, error: unknown): GatewayError {
  if (error instanceof GatewayError) return error
  if (code === 'PARSE') {
    const cause = (error as Error).cause
    return cause instanceof GatewayError ? cause : new GatewayError(400, 'invalid_request_error', 'Malformed request body')
  }
  if (error instanceof ValidationError) {
    // A route that did not rethrow its refused body (see RefusedBody) still answers with its error.
    return error.value instanceof RefusedBody ? error.value.error : validationError(error)
  }
  if (code === 'NOT_FOUND') return new GatewayError(404, 'not_found_error', 'Unknown route')
  return new GatewayError(500, 'api_error', 'Internal server error')
}

export function errorResponse(error: GatewayError): Response {
  const body: ErrorBody = error.toBody()
  const headers: Record<string, string> = { 'content-type': 'application/json', ...error.headers }
  return new Response(JSON.stringify(body), { status: error.status, headers })
}

/**
 * The gateway's HTTP conventions, for every route: request ids, latency header, JSON bodies with a
 * size limit, and the one place where errors become `{"error":{...}}` responses.
 */
export function httpConventions({ headers, maxBodyBytes, log, observer }: ConventionsOptions) {
  return new Elysia({ name: 'chatgate:http' })
    .onRequest(function markRequest({ request, set }) {
      const id = requestIdFor(request.headers.get('x-request-id'))
      beginRequest(request, id)
      set.headers['x-request-id'] = id
    })
    .onParse({ as: 'global' }, async function parseJson({ request, contentType }) {
      let body: Awaited<ReturnType<typeof readJsonBody>>
      try {
        body = await readJsonBody(request, contentType, maxBodyBytes)
      } catch (error) {
        if (error instanceof GatewayError) return new RefusedBody(error)
        throw error
      }
      if (body === null) return null
      recordOf(request).bodyText = body.text
      return body.value
    })
    .onAfterHandle({ as: 'global' }, function stampLatency({ request, set, responseValue }) {
      const record = recordOf(request)
      // No headers left means the handler built the whole response itself (see takeHeaders).
      for (const _ in set.headers) {
        set.headers[headers.latency] = String(elapsedMs(record))
        break
      }
      if (!record.deferred)
        observer.finish(record, responseValue instanceof Response ? responseValue.status : typeof set.status === 'number' ? set.status : 200)
    })
    .onError({ as: 'global' }, function shapeError({ code, error, request, set }) {
      const gatewayError = toGatewayError(code, error)
      const record = recordOf(request)
      if (gatewayError.status >= 500 && !(error instanceof GatewayError)) {
        log.error({ err: error, request_id: record.id, path: record.path }, 'unhandled error')
      }
      set.headers[headers.latency] = String(elapsedMs(record))
      observer.finish(record, gatewayError.status, gatewayError)
      return errorResponse(gatewayError)
    })
}
