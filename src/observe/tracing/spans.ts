/**
 * The spans of one request: a server span from arrival to the end of the answer (a stream: its last
 * event), and a client span per upstream attempt, retries and fallbacks each their own. The attempt
 * that answered is ended with the request, once its usage, cost and response id are known, at the
 * time the attempt itself ended.
 */
import { type Attributes, type Context, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, type TextMapGetter, trace, type Tracer } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_PATH,
  ATTR_URL_SCHEME,
  ATTR_USER_AGENT_ORIGINAL,
} from '@opentelemetry/semantic-conventions'
import type { GatewayError } from '../../errors'
import type { Target } from '../../routing/table'
import type { RequestRecord } from '../request-record'
import { answerAttributes, attemptAttributes, GEN_AI, requestAttributes } from './attributes'
import { traceRequest } from './registry'
import type { AttemptEnd, AttemptSpan, Tracing } from './types'

const propagator = new W3CTraceContextPropagator()
const fromHeaders: TextMapGetter<Headers> = { get: (headers, key) => headers.get(key) ?? undefined, keys: (headers) => [...headers.keys()] }
const intoRecord = { set: (carrier: Record<string, string>, key: string, value: string) => void (carrier[key] = value) }

interface Attempt {
  span: Span
  startedAt: number
  answeredAt?: number
  endedAt?: number
}

interface RequestSpans {
  server: Span
  context: Context
  /** Attempts whose span is still open: at most the one that answered, once the others failed. */
  open: Attempt[]
}

/** The host and port a request was addressed to, from its URL (Bun builds it from the Host header). */
function addressOf(url: string): Attributes {
  const schemeEnd = url.indexOf('://')
  const hostStart = schemeEnd + 3
  const hostEnd = url.indexOf('/', hostStart)
  const host = url.slice(hostStart, hostEnd === -1 ? undefined : hostEnd)
  const colon = host.lastIndexOf(':')
  const hasPort = colon > host.lastIndexOf(']')
  return {
    [ATTR_URL_SCHEME]: url.slice(0, schemeEnd),
    [ATTR_SERVER_ADDRESS]: hasPort ? host.slice(0, colon) : host,
    ...(hasPort ? { [ATTR_SERVER_PORT]: Number(host.slice(colon + 1)) } : {}),
  }
}

const errorTypeOf = (error: GatewayError): string => error.code ?? error.type

function markFailed(span: Span, error: GatewayError): void {
  span.setAttribute(ATTR_ERROR_TYPE, errorTypeOf(error))
  span.setStatus({ code: SpanStatusCode.ERROR, message: error.message })
}

export class RequestTracer implements Tracing {
  private readonly requests = new WeakMap<RequestRecord, RequestSpans>()

  constructor(
    private readonly tracer: Tracer,
    private readonly captureContent: boolean,
    readonly shutdown: () => Promise<void>,
  ) {}

  begin(record: RequestRecord, request: Request): void {
    const parent = propagator.extract(ROOT_CONTEXT, request.headers, fromHeaders)
    const userAgent = request.headers.get('user-agent')
    const server = this.tracer.startSpan(
      record.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          [ATTR_HTTP_REQUEST_METHOD]: record.method,
          [ATTR_URL_PATH]: record.path,
          ...addressOf(request.url),
          ...(userAgent === null ? {} : { [ATTR_USER_AGENT_ORIGINAL]: userAgent }),
          'chatgate.request_id': record.id,
        },
      },
      parent,
    )
    const spans: RequestSpans = { server, context: trace.setSpan(parent, server), open: [] }
    this.requests.set(record, spans)
    traceRequest(request.signal, { attempt: (target, attempt) => this.attempt(record, spans, target, attempt) })
  }

  private attempt(record: RequestRecord, spans: RequestSpans, target: Target, attempt: number): AttemptSpan {
    const attributes = attemptAttributes(record, target, attempt)
    const span = this.tracer.startSpan(`${attributes[GEN_AI.operation]} ${target.model}`, { kind: SpanKind.CLIENT, attributes }, spans.context)
    const state: Attempt = { span, startedAt: performance.now() }
    spans.open.push(state)
    const headers: Record<string, string> = {}
    propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, intoRecord)
    const close = () => spans.open.splice(spans.open.indexOf(state), 1)
    return {
      headers,
      failed: (error) => {
        markFailed(span, error)
        span.setAttribute('chatgate.outcome', errorTypeOf(error))
        span.end()
        close()
      },
      answered: () => {
        state.answeredAt ??= performance.now()
      },
      ended: (outcome: AttemptEnd, reason?: GatewayError) => {
        if (state.endedAt !== undefined) return
        state.endedAt = performance.now()
        span.setAttribute('chatgate.outcome', outcome === 'ok' ? 'ok' : outcome === 'abandoned' ? 'abandoned' : reason ? errorTypeOf(reason) : 'failed')
        if (outcome === 'failed' && reason) markFailed(span, reason)
      },
    }
  }

  finish(record: RequestRecord, status: number, error: GatewayError | undefined): void {
    const spans = this.requests.get(record)
    if (!spans) return
    this.requests.delete(record)
    const { server } = spans
    const route = record.route
    if (route) {
      server.updateName(`${record.method} ${route}`)
      server.setAttribute(ATTR_HTTP_ROUTE, route)
    }
    server.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status)
    server.setAttributes(requestAttributes(record, this.captureContent))
    if (error) server.setAttribute(ATTR_ERROR_TYPE, errorTypeOf(error))
    // A server span is an error when the gateway or its upstreams failed; a 4xx is the caller's (HTTP conventions).
    if (status >= 500) server.setStatus({ code: SpanStatusCode.ERROR, ...(error ? { message: error.message } : {}) })
    for (const attempt of spans.open) this.endAnswered(record, attempt, record.ttfbMs !== undefined)
    server.end()
  }

  /** Ends the attempt that answered, with what the request learnt of its answer. */
  private endAnswered(record: RequestRecord, attempt: Attempt, streamed: boolean): void {
    const { span } = attempt
    span.setAttributes(answerAttributes(record))
    if (streamed && attempt.answeredAt !== undefined) {
      span.setAttribute(GEN_AI.timeToFirstChunk, (attempt.answeredAt - attempt.startedAt) / 1000)
      span.addEvent('gen_ai.first_chunk', attempt.answeredAt)
    }
    span.end(attempt.endedAt)
  }
}
