import type { SQLQueryBindings, Statement } from 'bun:sqlite'
import { LATENCY_BOUNDS_MS, LATENCY_BUCKETS } from '../../db/schema'
import type { Db } from '../db'
import { invalidRequest } from '../errors'
import type { UsageEntry } from './recorder'

const LAT_COLUMNS = Array.from({ length: LATENCY_BUCKETS }, (_, i) => `lat_${i}`)

/** The histogram bucket a latency falls in. */
export function latencyBucket(ms: number): number {
  for (let i = 0; i < LATENCY_BOUNDS_MS.length; i++) if (ms <= LATENCY_BOUNDS_MS[i]!) return i
  return LATENCY_BOUNDS_MS.length
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

interface MinuteRow {
  minute: number
  keyId: string
  alias: string
  upstream: string
  requests: number
  errors: number
  prompt: number
  completion: number
  latency: number
  lat: number[]
}

/** Per-minute rollups, added up with the daily counters and written in the same transaction. */
export class MinuteRollups {
  private pending = new Map<string, MinuteRow>()
  private readonly upsert: Statement<unknown, SQLQueryBindings[]>

  constructor(db: Db) {
    const columns = ['minute', 'key_id', 'alias', 'upstream', 'requests', 'errors', 'prompt_tokens', 'completion_tokens', 'latency_ms_sum', ...LAT_COLUMNS]
    const added = columns.slice(4).map((c) => `${c} = ${c} + excluded.${c}`)
    // Raw SQL: fourteen histogram columns are written by position, which the query builder cannot
    // express without naming each one; the columns themselves come from db/schema.ts.
    this.upsert = db.$client.prepare(
      `INSERT INTO usage_minute (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})
       ON CONFLICT (minute, key_id, alias, upstream) DO UPDATE SET ${added.join(', ')}`,
    )
  }

  add(entry: UsageEntry): void {
    const minute = Math.floor(entry.at / 60_000) * 60
    const id = `${minute}\u0000${entry.keyId}\u0000${entry.alias}\u0000${entry.upstream}`
    let row = this.pending.get(id)
    if (!row) {
      row = {
        minute,
        keyId: entry.keyId,
        alias: entry.alias,
        upstream: entry.upstream,
        requests: 0,
        errors: 0,
        prompt: 0,
        completion: 0,
        latency: 0,
        lat: new Array(LATENCY_BUCKETS).fill(0),
      }
      this.pending.set(id, row)
    }
    row.requests++
    if (entry.error) row.errors++
    row.prompt += entry.promptTokens
    row.completion += entry.completionTokens
    row.latency += Math.round(entry.latencyMs)
    row.lat[latencyBucket(entry.latencyMs)]!++
  }

  /** Writes what is pending; call inside the recorder's transaction. */
  write(): void {
    for (const r of this.pending.values()) {
      this.upsert.run(r.minute, r.keyId, r.alias, r.upstream, r.requests, r.errors, r.prompt, r.completion, r.latency, ...r.lat)
    }
    this.clear()
  }

  clear(): void {
    this.pending = new Map()
  }
}

/** Deletes minute rollups older than the retention. Returns how many rows went. */
export function pruneMinuteRollups(db: Db, now: number, retentionDays: number): number {
  const cutoff = Math.floor((now - retentionDays * 86_400_000) / 1000)
  return db.$client.prepare('DELETE FROM usage_minute WHERE minute < ?').run(cutoff).changes
}

export type SeriesBucket = 'minute' | 'hour' | 'day'
const BUCKET_SECONDS: Record<SeriesBucket, number> = { minute: 60, hour: 3600, day: 86_400 }
/** At most this many points in one series: enough for 30 days of hours or a day of minutes. */
const MAX_POINTS = 1500

export interface SeriesQuery {
  from: number
  to: number
  bucket: SeriesBucket
  keyId?: string
  alias?: string
  upstream?: string
}

export interface SeriesPoint {
  t: string
  requests: number
  errors: number
  prompt_tokens: number
  completion_tokens: number
  p50_ms: number | null
  p95_ms: number | null
}

/**
 * A dense time series (every bucket from `from` to `to`, zeros where nothing happened), read from
 * the indexed minute rollups. Day buckets take their counters from the daily table, which is kept
 * forever, so a range longer than the rollup retention still counts every request; only the
 * percentiles are limited to what the rollups still hold.
 */
export function usageSeries(db: Db, query: SeriesQuery): SeriesPoint[] {
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
  const points: SeriesPoint[] = Array.from({ length: count }, (_, i) => ({
    t: new Date((first + i * step) * 1000).toISOString(),
    requests: 0,
    errors: 0,
    prompt_tokens: 0,
    completion_tokens: 0,
    p50_ms: null,
    p95_ms: null,
  }))

  const filters: string[] = []
  const params: (string | number)[] = [step, first, last + step]
  for (const [column, value] of [
    ['key_id', query.keyId],
    ['alias', query.alias],
    ['upstream', query.upstream],
  ] as const) {
    if (value !== undefined) {
      filters.push(`AND ${column} = ?`)
      params.push(value)
    }
  }
  const rows = db.$client
    .prepare(
      `SELECT (minute / ?1) AS b, sum(requests) AS requests, sum(errors) AS errors, sum(prompt_tokens) AS prompt, sum(completion_tokens) AS completion,
              ${LAT_COLUMNS.map((c) => `sum(${c}) AS ${c}`).join(', ')}
       FROM usage_minute WHERE minute >= ?2 AND minute < ?3 ${filters.join(' ')} GROUP BY b`,
    )
    .all(...params) as Record<string, number>[]
  for (const row of rows) {
    const point = points[row.b! - first / step]
    if (!point) continue
    const counts = LAT_COLUMNS.map((c) => row[c]!)
    point.requests = row.requests!
    point.errors = row.errors!
    point.prompt_tokens = row.prompt!
    point.completion_tokens = row.completion!
    point.p50_ms = percentileMs(counts, 0.5)
    point.p95_ms = percentileMs(counts, 0.95)
  }

  if (query.bucket === 'day') {
    const days = db.$client
      .prepare(
        `SELECT date, sum(requests) AS requests, sum(errors) AS errors, sum(prompt_tokens) AS prompt, sum(completion_tokens) AS completion
         FROM usage_daily WHERE date >= ?2 AND date <= ?3 ${filters.join(' ')} GROUP BY date`,
      )
      .all(0, points[0]!.t.slice(0, 10), points.at(-1)!.t.slice(0, 10), ...params.slice(3)) as {
      date: string
      requests: number
      errors: number
      prompt: number
      completion: number
    }[]
    for (const day of days) {
      const point = points[(Date.parse(`${day.date}T00:00:00Z`) / 1000 - first) / step]
      if (!point) continue
      point.requests = day.requests
      point.errors = day.errors
      point.prompt_tokens = day.prompt
      point.completion_tokens = day.completion
    }
  }
  return points
}
