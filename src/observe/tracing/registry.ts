import type { RequestTrace } from './types'

/**
 * Each traced request's trace, by its caller's abort signal: every route hands `request.signal` to
 * dispatch as `clientSignal`, so dispatch finds the trace without the serving layer passing it on.
 */
const traces = new WeakMap<AbortSignal, RequestTrace>()
/** False until a tracer starts: with tracing off, dispatch does not even look. */
let tracingStarted = false

export function traceRequest(signal: AbortSignal, trace: RequestTrace): void {
  tracingStarted = true
  traces.set(signal, trace)
}

/** The trace of the request whose caller signal this is; undefined when tracing is off or the request is not sampled. */
export const traceOf = (signal: AbortSignal): RequestTrace | undefined => (tracingStarted ? traces.get(signal) : undefined)
