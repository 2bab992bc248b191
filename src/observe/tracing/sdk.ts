/**
 * The OpenTelemetry SDK, put together from the settings: a tracer provider with the configured
 * sampler and resource, and a batch span processor sending to an OTLP/HTTP exporter. Loaded only when
 * tracing is on (tracing.ts).
 *
 * A collector that is down, slow or refusing must change nothing for callers: spans are exported in
 * batches off the request path, the queue is bounded (OTEL_BSP_MAX_QUEUE_SIZE: past it, spans are
 * dropped), each export is bounded (OTEL_EXPORTER_OTLP_TIMEOUT), and so is the number of exports in
 * flight. What is dropped is counted through the processor's own self-observability counter
 * (`otel.sdk.processor.span.processed` with an `error.type`): queue full, or an export that failed.
 */
import { type Attributes, type Counter, createNoopMeter, type Meter, type MeterProvider } from '@opentelemetry/api'
import { resourceFromAttributes } from '@opentelemetry/resources'
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  type SpanExporter,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace'
import { ATTR_ERROR_TYPE } from '@opentelemetry/semantic-conventions'
import type { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { readTracingSettings, type SamplerSetting, type TracingSettings } from './settings'
import { RequestTracer } from './spans'
import type { Tracing, TracingOptions } from './types'

/** How long stopping waits for the last export: a dead collector must not hold up a shutdown. */
const SHUTDOWN_MS = 5_000
/** Exports in flight at once, at most (each holds one batch in memory). */
const CONCURRENT_EXPORTS = 2

function sampler(setting: SamplerSetting): Sampler {
  switch (setting.kind) {
    case 'always_on':
      return new AlwaysOnSampler()
    case 'always_off':
      return new AlwaysOffSampler()
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(setting.ratio)
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() })
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() })
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(setting.ratio) })
  }
}

type ExporterConfig = NonNullable<ConstructorParameters<typeof ProtobufExporter>[0]>

async function exporter(settings: TracingSettings): Promise<SpanExporter> {
  const config: ExporterConfig = {
    url: settings.url,
    headers: settings.headers,
    timeoutMillis: settings.timeoutMs,
    // The exporter's CompressionAlgorithm enum has exactly these two string values.
    compression: settings.compression as ExporterConfig['compression'],
    concurrencyLimit: CONCURRENT_EXPORTS,
  }
  if (settings.protocol === 'http/json') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http')
    return new OTLPTraceExporter(config)
  }
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto')
  return new OTLPTraceExporter(config)
}

/**
 * A meter provider for the span processor's self-observability: its one counter of processed spans
 * reports those that carry an `error.type` (dropped: `queue_full`, or the export's error) to
 * `dropped`; every other instrument is a no-op.
 */
function droppedSpansMeter(dropped: (count: number, reason: string) => void): MeterProvider {
  const counter: Counter = {
    add(value: number, attributes?: Attributes) {
      const reason = attributes?.[ATTR_ERROR_TYPE]
      if (reason !== undefined) dropped(value, String(reason))
    },
  }
  const meter: Meter = Object.assign(Object.create(createNoopMeter()) as Meter, { createCounter: () => counter })
  return { getMeter: () => meter }
}

export async function createTracing(vars: Readonly<Record<string, string | undefined>>, options: TracingOptions): Promise<Tracing> {
  const settings = readTracingSettings(vars, options.version)
  const processor = new BatchSpanProcessor({
    exporter: await exporter(settings),
    ...settings.batch,
    selfObsMeterProvider: droppedSpansMeter(options.dropped),
  })
  const provider = new TracerProvider({
    resource: resourceFromAttributes(settings.resource),
    sampler: sampler(settings.sampler),
    spanLimits: settings.spanLimits,
    spanProcessors: [processor],
  })
  const shutdown = async () => {
    let timer: Timer | undefined
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, SHUTDOWN_MS)))
    await Promise.race([provider.shutdown().catch(() => {}), bound])
    clearTimeout(timer)
  }
  return new RequestTracer(provider.getTracer('chatgate', options.version), settings.captureContent, shutdown)
}
