/**
 * The standard OTEL_* variables, read from the gateway's environment (not process.env directly, so a
 * gateway built in a test process reads what it was given). A value the SDK would not understand
 * stops the start, naming the variable, as a bad config field does.
 */
import { parseKeyPairsIntoRecord } from '@opentelemetry/core'

type Vars = Readonly<Record<string, string | undefined>>

export type SamplerSetting =
  | { kind: 'always_on' | 'always_off' | 'parentbased_always_on' | 'parentbased_always_off' }
  | { kind: 'traceidratio' | 'parentbased_traceidratio'; ratio: number }

export interface TracingSettings {
  /** Where spans go: the traces endpoint as given, or `<OTEL_EXPORTER_OTLP_ENDPOINT>/v1/traces`. */
  url: string
  protocol: 'http/protobuf' | 'http/json'
  headers: Record<string, string>
  timeoutMs: number
  compression: 'gzip' | 'none'
  sampler: SamplerSetting
  batch: { scheduledDelayMillis: number; exportTimeoutMillis: number; maxQueueSize: number; maxExportBatchSize: number }
  /** Resource attributes: service name and version, then OTEL_RESOURCE_ATTRIBUTES, then OTEL_SERVICE_NAME. */
  resource: Record<string, string>
  spanLimits: { attributeValueLengthLimit?: number; attributeCountLimit?: number }
  /** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: message content goes on spans. */
  captureContent: boolean
}

const bad = (name: string, value: string, expected: string) => new Error(`${name}="${value}" is not valid: expected ${expected}`)

/** The first of the variables that is set (signal-specific first), with its name. */
function first(vars: Vars, ...names: string[]): { name: string; value: string } | null {
  for (const name of names) {
    const value = vars[name]?.trim()
    if (value) return { name, value }
  }
  return null
}

function integer(vars: Vars, fallback: number, min: number, ...names: string[]): number {
  const found = first(vars, ...names)
  if (!found) return fallback
  const value = Number(found.value)
  if (!Number.isInteger(value) || value < min) throw bad(found.name, found.value, `a whole number of at least ${min}`)
  return value
}

function endpoint(vars: Vars): string {
  const traces = first(vars, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT')
  const found = traces ?? first(vars, 'OTEL_EXPORTER_OTLP_ENDPOINT')!
  let url: URL
  try {
    url = new URL(found.value)
  } catch {
    throw bad(found.name, found.value, 'an http:// or https:// URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw bad(found.name, found.value, 'an http:// or https:// URL (gRPC is not supported)')
  // The signal-specific variable is the full URL; the general one is a base the signal's path is added to.
  return traces ? url.toString() : `${found.value.replace(/\/+$/, '')}/v1/traces`
}

function protocol(vars: Vars): TracingSettings['protocol'] {
  const found = first(vars, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL')
  if (!found || found.value === 'http/protobuf') return 'http/protobuf'
  if (found.value === 'http/json') return 'http/json'
  throw bad(found.name, found.value, '"http/protobuf" or "http/json" (gRPC is not supported: use the collector\'s OTLP/HTTP port, 4318)')
}

const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const

function sampler(vars: Vars): SamplerSetting {
  const found = first(vars, 'OTEL_TRACES_SAMPLER')
  const kind = (found?.value ?? 'parentbased_always_on') as (typeof SAMPLERS)[number]
  if (!SAMPLERS.includes(kind)) throw bad('OTEL_TRACES_SAMPLER', found!.value, SAMPLERS.join(', '))
  if (kind !== 'traceidratio' && kind !== 'parentbased_traceidratio') return { kind }
  const arg = first(vars, 'OTEL_TRACES_SAMPLER_ARG')
  const ratio = arg ? Number(arg.value) : 1
  if (!(ratio >= 0 && ratio <= 1)) throw bad('OTEL_TRACES_SAMPLER_ARG', arg!.value, 'a ratio from 0 to 1')
  return { kind, ratio }
}

function keyPairs(vars: Vars, name: string): Record<string, string> {
  const raw = vars[name]?.trim()
  return raw ? parseKeyPairsIntoRecord(raw) : {}
}

export function readTracingSettings(vars: Vars, version: string): TracingSettings {
  const exporter = first(vars, 'OTEL_TRACES_EXPORTER')
  if (exporter && exporter.value !== 'otlp') throw bad(exporter.name, exporter.value, '"otlp" or "none"')
  const compression = first(vars, 'OTEL_EXPORTER_OTLP_TRACES_COMPRESSION', 'OTEL_EXPORTER_OTLP_COMPRESSION')
  if (compression && compression.value !== 'gzip' && compression.value !== 'none') throw bad(compression.name, compression.value, '"gzip" or "none"')
  const maxQueueSize = integer(vars, 2048, 1, 'OTEL_BSP_MAX_QUEUE_SIZE')
  const serviceName = first(vars, 'OTEL_SERVICE_NAME')
  const valueLength = integer(vars, 0, 0, 'OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT', 'OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT')
  const attributeCount = integer(vars, 0, 0, 'OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT', 'OTEL_ATTRIBUTE_COUNT_LIMIT')
  return {
    url: endpoint(vars),
    protocol: protocol(vars),
    headers: { ...keyPairs(vars, 'OTEL_EXPORTER_OTLP_HEADERS'), ...keyPairs(vars, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS') },
    timeoutMs: integer(vars, 10_000, 1, 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', 'OTEL_EXPORTER_OTLP_TIMEOUT'),
    compression: compression?.value === 'gzip' ? 'gzip' : 'none',
    sampler: sampler(vars),
    batch: {
      scheduledDelayMillis: integer(vars, 5000, 0, 'OTEL_BSP_SCHEDULE_DELAY'),
      exportTimeoutMillis: integer(vars, 30_000, 1, 'OTEL_BSP_EXPORT_TIMEOUT'),
      maxQueueSize,
      maxExportBatchSize: Math.min(maxQueueSize, integer(vars, 512, 1, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE')),
    },
    resource: {
      'service.name': 'chatgate',
      'service.version': version,
      ...keyPairs(vars, 'OTEL_RESOURCE_ATTRIBUTES'),
      ...(serviceName ? { 'service.name': serviceName.value } : {}),
    },
    spanLimits: {
      ...(valueLength > 0 ? { attributeValueLengthLimit: valueLength } : {}),
      ...(attributeCount > 0 ? { attributeCountLimit: attributeCount } : {}),
    },
    captureContent: vars.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT?.trim().toLowerCase() === 'true',
  }
}
