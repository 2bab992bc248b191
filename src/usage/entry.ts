/** One request as usage counts it: who made it, what it used, how it went. */
export interface UsageEntry {
  keyId: string
  alias: string
  upstream: string
  error: boolean
  promptTokens: number
  completionTokens: number
  /** Its exact cost in nano-dollars (1e-9 USD); 0 on an unpriced target. */
  costNanos: number
  /** A response cache hit: what it saved (the cost of the answer it repeated), in nano-dollars. */
  cacheSavedNanos?: number
  latencyMs: number
  /** When it ended (ms since the epoch): the minute and UTC day it is counted in. */
  at: number
  /**
   * The shared limiter's id for the admission this entry settles: what makes a settle that is sent
   * again (its answer was lost, or it waited for Redis in a local journal) count once.
   */
  admissionId?: string
  /** The shared limiter's epoch when it admitted the request: tells a settle sent twice from one whose admission Redis lost. */
  admissionEpoch?: string
}

/** Usage rows of requests that never reached an upstream (every circuit open) use this upstream name. */
export const NO_UPSTREAM = '-'
