/** Traces as the rest of the gateway sees them: a request's spans, and what starts them. */
import type { GatewayError } from '../../errors'
import type { Target } from '../../routing/table'
import type { RequestRecord } from '../request-record'

/** How an answered attempt ended (as dispatch's AttemptOutcome). */
export type AttemptEnd = 'ok' | 'failed' | 'abandoned'

/** One upstream attempt's client span. */
export interface AttemptSpan {
  /** The W3C trace context headers the upstream request carries (`traceparent`, and `tracestate` when there is one). */
  readonly headers: Readonly<Record<string, string>>
  /** The attempt failed before answering (a retry or a fallback may follow): the span ends in error. */
  failed(error: GatewayError): void
  /** The upstream answered (a stream: its first events are in). */
  answered(): void
  /** The answered attempt is over; the span ends with the request, which knows its usage. */
  ended(outcome: AttemptEnd, reason?: GatewayError): void
}

/** A request's trace, as dispatch sees it: where its attempts' spans start. */
export interface RequestTrace {
  attempt(target: Target, attempt: number): AttemptSpan
}

/** Tracing of requests: a server span each, opened as the request arrives, closed when it is finished. */
export interface Tracing {
  /** Opens the request's server span, continuing the caller's `traceparent`. */
  begin(record: RequestRecord, request: Request): void
  /** Ends every span of a finished request (an observer finish listener). */
  finish(record: RequestRecord, status: number, error: GatewayError | undefined): void
  /** Exports what is queued (within a bound) and stops. */
  shutdown(): Promise<void>
}

/** What the tracer is given besides the environment. */
export interface TracingOptions {
  /** The gateway's version (`service.version`). */
  version: string
  /** Told of spans that never reach the collector, and why: `queue_full`, or the failed export's error. */
  dropped(count: number, reason: string): void
}
