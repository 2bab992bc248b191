/**
 * Whether to trace, and starting it. Nothing of OpenTelemetry is loaded here: the SDK is imported
 * only when an OTLP endpoint is configured (sdk.ts), so with tracing off no span is made and no SDK
 * code is in memory; the hooks on the request path (observer.ts, registry.ts) are then null checks.
 */
import type { Tracing, TracingOptions } from './types'

/** The variables that turn tracing on (the SDK's own: an OTLP endpoint, for traces or for every signal). */
export const tracingRequested = (vars: Readonly<Record<string, string | undefined>>): boolean =>
  Boolean(vars.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || vars.OTEL_EXPORTER_OTLP_ENDPOINT) &&
  vars.OTEL_SDK_DISABLED?.trim().toLowerCase() !== 'true' &&
  vars.OTEL_TRACES_EXPORTER?.trim().toLowerCase() !== 'none'

/** Starts tracing when the environment asks for it (loading the SDK then), else null. Throws naming a bad variable. */
export async function startTracing(vars: Readonly<Record<string, string | undefined>>, options: TracingOptions): Promise<Tracing | null> {
  if (!tracingRequested(vars)) return null
  const { createTracing } = await import('./sdk')
  return createTracing(vars, options)
}
