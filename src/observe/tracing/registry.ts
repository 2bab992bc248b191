import type { RequestTrace } from './types'

/**
 * Each traced request's trace, by its caller's abort signal: the tracer registers it as the request
 * begins, and serving (serve.ts) finds it from the `clientSignal` every route hands on, and passes it
 * to dispatch for the attempts' spans.
 */
const traces = new WeakMap<AbortSignal, RequestTrace>()
/** False until a tracer starts: with tracing off, nothing is looked up. */
let tracingStarted = false

export function traceRequest(signal: AbortSignal, trace: RequestTrace): void {
  tracingStarted = true
  traces.set(signal, trace)
}

/** The trace of the request whose caller signal this is; undefined when tracing is off or the request is not sampled. */
export const traceOf = (signal: AbortSignal): RequestTrace | undefined => (tracingStarted ? traces.get(signal) : undefined)
