import type { GatewayError } from '../errors'

/** The limits in force for one key: its tier's, with the key's own overrides applied. */
export interface KeyLimits {
  requestsPerMinute: number
  tokensPerMinute: number
  maxConcurrent: number
  /** null: no quota. */
  dailyRequestQuota: number | null
  monthlyTokenQuota: number | null
}

/** What the x-ratelimit-* headers report. */
export interface LimitState {
  limit: number
  remaining: number
  /** Whole seconds until the window frees a request (0 when nothing is counted). */
  resetSeconds: number
  tokenLimit: number
  tokensRemaining: number
}

export type Admission =
  | {
      ok: true
      state: LimitState
      /** Ends the request at `at`: frees its concurrency slot and charges the tokens it really used. Idempotent. */
      release(tokens: number, at: number): Promise<void>
    }
  | { ok: false; state: LimitState; error: GatewayError; reason: RefusalReason }

/** Which limit refused a request (the `reason` label of the refusal metric). */
export type RefusalReason = 'requests' | 'tokens' | 'concurrency' | 'quota'

/** Where quotas start from when a key is first seen in a period: the persisted usage counters. */
export interface QuotaBaseline {
  requestsOn(keyId: string, day: string): Promise<number>
  tokensSince(keyId: string, firstDay: string): Promise<number>
}

/**
 * The one limiter interface. The in-memory implementation (memory.ts) is exact for one process; a
 * shared store (Redis) implements the same interface without the serving pipeline changing.
 */
export interface Limiter {
  /** The key's state as this process knows it, counting nothing (for responses refused before admission). */
  peek(keyId: string, limits: KeyLimits, now: number): LimitState
  /** Counts the request if every limit allows it; a refusal consumes nothing. */
  admit(keyId: string, limits: KeyLimits, now: number): Promise<Admission>
}
