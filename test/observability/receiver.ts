/**
 * A real OTLP/HTTP trace receiver for the tests (and the bench): `Bun.serve` on 127.0.0.1, taking
 * `POST /v1/traces` in protobuf (decoded with protobufjs from the official .proto files, vendored
 * under ./proto from github.com/open-telemetry/opentelemetry-proto v1.11.0, Apache-2.0) or in JSON,
 * as the OTLP specification writes both. It can also misbehave as a collector does: answer 500, or
 * take its time over every export.
 */
import type { Server } from 'bun'
import { join } from 'node:path'
import protobuf from 'protobufjs'

type Json = Record<string, any>

export interface ReceivedSpan {
  traceId: string
  spanId: string
  /** '' for a root span. */
  parentSpanId: string
  name: string
  /** OTLP's SpanKind: 2 server, 3 client. */
  kind: number
  startNs: bigint
  endNs: bigint
  attributes: Record<string, unknown>
  events: { name: string; timeNs: bigint; attributes: Record<string, unknown> }[]
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  status: { code: number; message: string }
  resource: Record<string, unknown>
}

export interface ReceivedExport {
  contentType: string
  headers: Headers
  path: string
}

export type CollectorBehaviour = { kind: 'ok' } | { kind: 'fail'; status: number } | { kind: 'slow'; ms: number }

export interface OtlpReceiver {
  server: Server<undefined>
  /** The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  url: string
  /** The spans received (none kept when the receiver only counts them). */
  spans: ReceivedSpan[]
  /** How many spans were received (0 when the receiver only counts exports). */
  received: number
  /** Bytes of export bodies received. */
  bytes: number
  exports: ReceivedExport[]
  behaviour: CollectorBehaviour
  stop(): void
}

const root = new protobuf.Root()
root.resolvePath = (_origin, target) => join(import.meta.dir, 'proto', target)
root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto')
const ExportTraceServiceRequest = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest')

/** An AnyValue, as protobufjs's toObject or OTLP's JSON encoding gives it, as a plain value. */
function anyValue(value: Json | undefined): unknown {
  if (!value) return undefined
  if ('stringValue' in value) return value.stringValue
  if ('boolValue' in value) return value.boolValue
  if ('intValue' in value) return Number(value.intValue)
  if ('doubleValue' in value) return Number(value.doubleValue)
  if ('arrayValue' in value) return ((value.arrayValue.values ?? []) as Json[]).map(anyValue)
  return undefined
}

const attributesOf = (list: Json[] | undefined): Record<string, unknown> => Object.fromEntries((list ?? []).map((kv) => [kv.key, anyValue(kv.value)]))

/** Ids: hex strings in JSON; bytes in protobuf (as Uint8Array from toObject). */
const hex = (id: unknown): string => (typeof id === 'string' ? id.toLowerCase() : id ? Buffer.from(id as Uint8Array).toString('hex') : '')

function spansOf(request: Json): ReceivedSpan[] {
  const spans: ReceivedSpan[] = []
  for (const resourceSpans of request.resourceSpans ?? []) {
    const resource = attributesOf(resourceSpans.resource?.attributes)
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans ?? []) {
        spans.push({
          traceId: hex(span.traceId),
          spanId: hex(span.spanId),
          parentSpanId: hex(span.parentSpanId),
          name: span.name,
          kind: typeof span.kind === 'string' ? Number(span.kind) : (span.kind ?? 0),
          startNs: BigInt(span.startTimeUnixNano),
          endNs: BigInt(span.endTimeUnixNano),
          attributes: attributesOf(span.attributes),
          events: ((span.events ?? []) as Json[]).map((e) => ({ name: e.name, timeNs: BigInt(e.timeUnixNano), attributes: attributesOf(e.attributes) })),
          status: { code: span.status?.code ?? 0, message: span.status?.message ?? '' },
          resource,
        })
      }
    }
  }
  return spans
}

function decodeExport(contentType: string, body: Uint8Array): Json {
  if (contentType.includes('json')) return JSON.parse(new TextDecoder().decode(body)) as Json
  return ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(body), { longs: String, enums: Number, defaults: false }) as Json
}

/**
 * A receiver on a free port. `decode: false` takes exports without decoding them (the bench: decoding
 * would take CPU from the gateway it measures, on the same cores); only exports and bytes are counted.
 */
export function otlpReceiver(behaviour: CollectorBehaviour = { kind: 'ok' }, { decode = true } = {}): OtlpReceiver {
  const receiver: OtlpReceiver = {
    server: undefined as never,
    url: '',
    spans: [],
    received: 0,
    bytes: 0,
    exports: [],
    behaviour,
    stop: () => void receiver.server.stop(true),
  }
  receiver.server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 60,
    async fetch(request) {
      const contentType = request.headers.get('content-type') ?? ''
      const body = new Uint8Array(await request.arrayBuffer())
      receiver.bytes += body.byteLength
      receiver.exports.push({ contentType, headers: decode ? request.headers : new Headers(), path: decode ? new URL(request.url).pathname : '' })
      const now = receiver.behaviour
      if (now.kind === 'fail') return new Response('collector failure', { status: now.status })
      if (now.kind === 'slow') await Bun.sleep(now.ms)
      if (decode) {
        const spans = spansOf(decodeExport(contentType, body))
        receiver.received += spans.length
        receiver.spans.push(...spans)
      }
      // An empty ExportTraceServiceResponse: full success.
      return contentType.includes('json') ? Response.json({}) : new Response(new Uint8Array(), { headers: { 'content-type': 'application/x-protobuf' } })
    },
  })
  receiver.url = `http://127.0.0.1:${receiver.server.port}`
  return receiver
}
