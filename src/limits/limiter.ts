import type { GatewayError } from '../errors'
import type { UsageEntry } from '../usage/entry'

/** The limits in force for one key: its tier's, with the key's own overrides applied. */
export interface KeyLimits {
  requestsPerMinute: number
  tokensPerMinute: number
  maxConcurrent: number
  /** null: no quota. */
  dailyRequestQuota: number | null
  monthlyTokenQuota: number | null
  /** Spend per UTC day and month, in nano-dollars; null: no budget. */
  dailyBudgetNanos: number | null
  monthlyBudgetNanos: number | null
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

/**
 * What the headers report for a key with `requests` and `tokens` in its windows, the oldest request
 * leaving in `msUntilOldestLeaves`: whole seconds, rounded up, and 0 when nothing is counted.
 */
export const limitState = (limits: KeyLimits, requests: number, tokens: number, msUntilOldestLeaves: number): LimitState => ({
  limit: limits.requestsPerMinute,
  remaining: Math.max(0, limits.requestsPerMinute - requests),
  resetSeconds: requests === 0 ? 0 : Math.max(1, Math.ceil(msUntilOldestLeaves / 1000)),
  tokenLimit: limits.tokensPerMinute,
  tokensRemaining: Math.max(0, limits.tokensPerMinute - tokens),
})

/** The state of a key nothing has been counted for: every allowance whole. */
export const untouchedState = (limits: KeyLimits): LimitState => limitState(limits, 0, 0, 0)

export type Admission =
  | {
      ok: true
      state: LimitState
      /**
       * Ends the request: frees its concurrency slot, drops its reservation, charges the tokens and
       * the cost it really used, and records its usage entry. Resolves once the entry is durable;
       * await it before the response ends. Exactly once: a second call is a no-op.
       */
      settle(entry: UsageEntry): Promise<void>
      /**
       * Ends a request that is not one in usage (a token count): frees its concurrency slot and its
       * reservation and gives back its count in the daily request quota, but records no usage
       * entry and charges nothing. The request stays in the per-minute window: it was a request
       * against the key's rate limit. Exactly once, and a no-op after `settle` (and vice versa).
       */
      release(): Promise<void>
    }
  | { ok: false; state: LimitState; error: GatewayError; reason: RefusalReason }

/** Which limit refused a request (the `reason` label of the refusal metric). */
export type RefusalReason = 'requests' | 'tokens' | 'concurrency' | 'quota' | 'budget'

/** One key's persisted usage in the current day and month: where its quotas and budgets stand. */
export interface PeriodUsage {
  requestsToday: number
  costToday: number
  tokensThisMonth: number
  costThisMonth: number
}

/** Where quotas and budgets start from when a key is first seen: the persisted usage counters of its day and month. */
export interface QuotaBaseline {
  /** Requests and spend (nano-dollars) of the key on a UTC day. */
  dayUsage(keyId: string, day: string): Promise<{ requests: number; costNanos: number }>
  /** Tokens and spend of the key from `firstDay` (the 1st of a month) on. */
  monthUsage(keyId: string, firstDay: string): Promise<{ tokens: number; costNanos: number }>
  /** Every key's usage on `day` and from `firstDay` on: for seeding a shared limiter that lost its counters. */
  allKeys(day: string, firstDay: string): Promise<Map<string, PeriodUsage>>
}

/**
 * The one limiter interface. The in-memory implementation (memory.ts) is exact for one process; the
 * Redis one (storage/redis) is exact across instances, behind the same interface.
 */
export interface Limiter {
  /** The key's state as this process knows it, counting nothing (for responses refused before admission). */
  peek(keyId: string, limits: KeyLimits, now: number): LimitState
  /**
   * Counts the request if every limit allows it, and reserves `reserveNanos` of the key's budgets
   * until it is released; a refusal consumes nothing. A budget refuses once the key's settled spend
   * plus its reservations has reached it.
   */
  admit(keyId: string, limits: KeyLimits, now: number, reserveNanos?: number): Promise<Admission>
}
