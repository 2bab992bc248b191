import type { UsageTotals } from './accumulator'

/** What a fold adds: the counters, and the journal batch they reach (0 without a journal). */
export interface FoldPlan {
  totals: UsageTotals
  seq: number
}

/** Where usage counters are kept: the write side. */
export interface UsageStore {
  /**
   * In one transaction: reads how far `journal` is folded (0 for null or a journal never folded),
   * asks `plan` what to add past that point (null: nothing), then adds those counters and moves
   * the journal's point to `seq`. A counter is therefore never added twice, whoever folds.
   */
  fold(journal: string | null, plan: (foldedSeq: number) => FoldPlan | null): Promise<void>
  /** Forgets a journal's fold point, once its file is gone. */
  forgetJournal(journal: string): Promise<void>
  /** Deletes minute rows that start before `before` (ms); returns how many went. */
  pruneMinutes(before: number): Promise<number>
}

export interface UsageCounters {
  requests: number
  errors: number
  prompt_tokens: number
  completion_tokens: number
  total_tokens: number
  /** Spend in USD: the sum of each request's exact cost (nano-dollar precision). */
  cost_usd: number
  /** What response cache hits saved, in USD: the cost of the answers they repeated (they cost nothing). */
  cache_saved_usd: number
}

/** A row of a usage report: one key's use of an alias through an upstream on one UTC day. */
export interface UsageRow extends UsageCounters {
  key_id: string
  key_prefix: string
  date: string
  alias: string
  upstream: string
  latency_ms_sum: number
}

/** A report row as stored: spend as integer nano-dollars, which reports turn into `cost_usd`. */
export interface StoredUsageRow extends Omit<UsageRow, 'cost_usd' | 'cache_saved_usd'> {
  cost_nanos: number
  cache_saved_nanos: number
}

/** Which counters a report or series covers: absent filters match everything. */
export interface UsageFilter {
  keyId?: string
  alias?: string
  upstream?: string
}

export interface UsageQuery extends UsageFilter {
  /** First and last UTC day, YYYY-MM-DD, inclusive. */
  from: string
  to: string
  /** Only these keys (one page of the key listing). */
  keyIds?: string[]
}

/** One bucket of a time series as stored: its index (bucket start / step) and its sums. */
export interface BucketSums {
  bucket: number
  requests: number
  errors: number
  promptTokens: number
  completionTokens: number
  costNanos: number
  cacheSavedNanos: number
  /** Per latency bucket; empty when the sums come from the daily table. */
  latencyCounts: number[]
}

/** Where usage counters are kept: the read side. */
export interface UsageReadStore {
  /** Daily rows in a date range, oldest first, with their spend in nano-dollars. */
  rows(query: UsageQuery): Promise<StoredUsageRow[]>
  /** Minute rows from `from` to `to` (unix seconds, end excluded), added up in buckets of `step` seconds. */
  minuteBuckets(step: number, from: number, to: number, filter: UsageFilter): Promise<BucketSums[]>
  /** Daily rows from `from` to `to` (YYYY-MM-DD, inclusive), one bucket per day (the day's index since the epoch). */
  dayBuckets(from: string, to: string, filter: UsageFilter): Promise<BucketSums[]>
}
