import { LATENCY_BOUNDS_MS } from '../../db/latency'
import { invalidRequest } from '../errors'
import { DAY_MS, utcDate } from '../time'
import { usd } from '../spend/price'
import type { StoredUsageRow, UsageCounters, UsageFilter, UsageQuery, UsageReadStore, UsageRow } from './store'

export type SeriesBucket = 'minute' | 'hour' | 'day'
const BUCKET_SECONDS: Record<SeriesBucket, number> = { minute: 60, hour: 3600, day: 86_400 }
/** At most this many points in one series: enough for 30 days of hours or a day of minutes. */
const MAX_POINTS = 1500

export interface SeriesQuery extends UsageFilter {
  /** ms since the epoch; `to` is excluded. */
  from: number
  to: number
  bucket: SeriesBucket
}

export interface SeriesPoint {
  t: string
  requests: number
  errors: number
  prompt_tokens: number
  completion_tokens: number
  cost_usd: number
  /** What response cache hits saved in the bucket. */
  cache_saved_usd: number
  p50_ms: number | null
  p95_ms: number | null
}

/** What one key spent and did, beside it in the key listing. */
export interface KeyActivity {
  todayNanos: number
  monthNanos: number
  requestsToday: number
  tokensToday: number
}

export interface UsageReport {
  totals: UsageCounters
  data: UsageRow[]
}

/** A latency percentile from histogram counts, interpolated within its bucket (ms). */
export function percentileMs(counts: number[], q: number): number | null {
  const total = counts.reduce((sum, n) => sum + n, 0)
  if (total === 0) return null
  const target = q * total
  let seen = 0
  for (let i = 0; i < counts.length; i++) {
    const n = counts[i]!
    if (n > 0 && seen + n >= target) {
      const lower = i === 0 ? 0 : LATENCY_BOUNDS_MS[i - 1]!
      const upper = LATENCY_BOUNDS_MS[i]
      if (upper === undefined) return lower
      return Math.round(lower + ((upper - lower) * (target - seen)) / n)
    }
    seen += n
  }
  return null
}

const DATE = /^\d{4}-\d{2}-\d{2}$/
const MAX_RANGE_DAYS = 366

/** Validates a `from`/`to` pair of UTC dates (inclusive), each defaulting to today. */
export function usageRange(from: string | undefined, to: string | undefined, now: number): { from: string; to: string } {
  const today = utcDate(now)
  const range = { from: from ?? today, to: to ?? today }
  for (const param of ['from', 'to'] as const) {
    const value = range[param]
    if (!DATE.test(value) || utcDate(Date.parse(`${value}T00:00:00Z`) || 0) !== value) {
      throw invalidRequest(`Invalid request: ${param} must be a date like 2026-01-31, got "${value}"`, { param })
    }
  }
  const days = (Date.parse(range.to) - Date.parse(range.from)) / DAY_MS
  if (days < 0) throw invalidRequest('Invalid request: from must not be after to', { param: 'from' })
  if (days >= MAX_RANGE_DAYS) throw invalidRequest(`Invalid request: at most ${MAX_RANGE_DAYS} days at once`, { param: 'from' })
  return range
}

/** Totals of stored rows; spend is added up in nano-dollars, so the total is the exact sum of the rows. */
function totalsOf(rows: StoredUsageRow[]): UsageCounters {
  const totals: UsageCounters = { requests: 0, errors: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cost_usd: 0, cache_saved_usd: 0 }
  let costNanos = 0
  let savedNanos = 0
  for (const row of rows) {
    totals.requests += row.requests
    totals.errors += row.errors
    totals.prompt_tokens += row.prompt_tokens
    totals.completion_tokens += row.completion_tokens
    totals.total_tokens += row.total_tokens
    costNanos += row.cost_nanos
    savedNanos += row.cache_saved_nanos
  }
  totals.cost_usd = usd(costNanos)
  totals.cache_saved_usd = usd(savedNanos)
  return totals
}

const reportRow = ({ cost_nanos, cache_saved_nanos, ...row }: StoredUsageRow): UsageRow => ({
  ...row,
  cost_usd: usd(cost_nanos),
  cache_saved_usd: usd(cache_saved_nanos),
})

/**
 * The read side of usage: reports and time series. `flush` makes everything recorded so far
 * readable (the recorder's fold, or folding every journal for the CLI), so reads are exact.
 */
export class UsageReports {
  constructor(
    private readonly store: UsageReadStore,
    private readonly flush: () => Promise<void>,
  ) {}

  /** Counter rows for a date range (inclusive), with their totals. */
  async report(query: UsageQuery): Promise<UsageReport> {
    await this.flush()
    const rows = await this.store.rows(query)
    return { totals: totalsOf(rows), data: rows.map(reportRow) }
  }

  /**
   * Spend today and this month (UTC, nano-dollars) and today's requests and tokens of the keys
   * `keyIds` (one page of the listing), everything recorded so far included.
   */
  async spendByKey(now: number, keyIds: string[]): Promise<Map<string, KeyActivity>> {
    const spend = new Map<string, KeyActivity>()
    if (keyIds.length === 0) return spend
    await this.flush()
    const today = utcDate(now)
    for (const row of await this.store.rows({ from: `${today.slice(0, 7)}-01`, to: today, keyIds })) {
      let key = spend.get(row.key_id)
      if (!key) spend.set(row.key_id, (key = { todayNanos: 0, monthNanos: 0, requestsToday: 0, tokensToday: 0 }))
      key.monthNanos += row.cost_nanos
      if (row.date !== today) continue
      key.todayNanos += row.cost_nanos
      key.requestsToday += row.requests
      key.tokensToday += row.total_tokens
    }
    return spend
  }

  /**
   * A dense time series (every bucket from `from` to `to`, zeros where nothing happened), read from
   * the minute rollups. Day buckets take their counters from the daily table, which is kept
   * forever, so a range longer than the rollup retention still counts every request; only the
   * percentiles are limited to what the rollups still hold.
   */
  async series(query: SeriesQuery): Promise<SeriesPoint[]> {
    const step = BUCKET_SECONDS[query.bucket]
    if (query.to <= query.from) throw invalidRequest('Invalid request: from must be before to', { param: 'from' })
    // The buckets are the last ceil(span / step) ones, ending with the bucket that holds `to`: an
    // hour of minutes is always 60 points, however the range is aligned.
    const count = Math.ceil((query.to - query.from) / 1000 / step)
    const last = Math.floor((query.to - 1) / 1000 / step) * step
    const first = last - (count - 1) * step
    if (count > MAX_POINTS) {
      throw invalidRequest(`Invalid request: ${count} ${query.bucket} buckets asked; at most ${MAX_POINTS}`, { param: 'bucket' })
    }
    await this.flush()
    const points: SeriesPoint[] = Array.from({ length: count }, (_, i) => ({
      t: new Date((first + i * step) * 1000).toISOString(),
      requests: 0,
      errors: 0,
      prompt_tokens: 0,
      completion_tokens: 0,
      cost_usd: 0,
      cache_saved_usd: 0,
      p50_ms: null,
      p95_ms: null,
    }))
    const filter: UsageFilter = { keyId: query.keyId, alias: query.alias, upstream: query.upstream }
    const fill = (sums: Awaited<ReturnType<UsageReadStore['minuteBuckets']>>, percentiles: boolean) => {
      for (const bucket of sums) {
        const point = points[bucket.bucket - first / step]
        if (!point) continue
        point.requests = bucket.requests
        point.errors = bucket.errors
        point.prompt_tokens = bucket.promptTokens
        point.completion_tokens = bucket.completionTokens
        point.cost_usd = usd(bucket.costNanos)
        point.cache_saved_usd = usd(bucket.cacheSavedNanos)
        if (percentiles) {
          point.p50_ms = percentileMs(bucket.latencyCounts, 0.5)
          point.p95_ms = percentileMs(bucket.latencyCounts, 0.95)
        }
      }
    }
    fill(await this.store.minuteBuckets(step, first, last + step, filter), true)
    if (query.bucket === 'day') fill(await this.store.dayBuckets(points[0]!.t.slice(0, 10), points.at(-1)!.t.slice(0, 10), filter), false)
    return points
  }
}
