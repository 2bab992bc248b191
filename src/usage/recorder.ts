import { and, asc, eq, gte, lte, sql } from 'drizzle-orm'
import { apiKeys, usageDaily } from '../../db/schema'
import type { Db } from '../db'
import { GatewayError } from '../errors'
import type { QuotaBaseline } from '../limits/limiter'
import { MinuteRollups } from './rollups'

export interface UsageEntry {
  keyId: string
  alias: string
  upstream: string
  error: boolean
  promptTokens: number
  completionTokens: number
  latencyMs: number
  at: number
}

/** "YYYY-MM-DD" of a time, in UTC. */
export const utcDate = (ms: number): string => new Date(ms).toISOString().slice(0, 10)

// A type alias, not an interface: it must fit the statement's named-parameter record.
type PendingRow = {
  keyId: string
  date: string
  alias: string
  upstream: string
  requests: number
  errors: number
  prompt: number
  completion: number
  total: number
  latency: number
}

/**
 * Usage counters (daily, and per-minute rollups for the dashboard) with group commit. Every entry
 * recorded in the same event-loop turn is merged and written in one transaction; `record` resolves once that transaction has committed. Callers
 * await it before the response is finished, so a response the client received is counted even if
 * the process dies right after (WAL: a committed transaction survives a process kill), without a
 * transaction per request.
 */
export class UsageRecorder {
  private readonly upsert
  private pending = new Map<string, PendingRow>()
  private committed: Promise<void> | null = null
  private settle: { resolve: () => void; reject: (error: unknown) => void } | null = null
  private readonly rollups: MinuteRollups
  private dayStart = 0
  private dayEnd = 0
  private day = ''

  constructor(private readonly db: Db) {
    this.rollups = new MinuteRollups(db)
    const p = (name: string) => sql.placeholder(name)
    this.upsert = db
      .insert(usageDaily)
      .values({
        keyId: p('keyId'),
        date: p('date'),
        alias: p('alias'),
        upstream: p('upstream'),
        requests: p('requests'),
        errors: p('errors'),
        promptTokens: p('prompt'),
        completionTokens: p('completion'),
        totalTokens: p('total'),
        latencyMsSum: p('latency'),
      })
      .onConflictDoUpdate({
        target: [usageDaily.keyId, usageDaily.date, usageDaily.alias, usageDaily.upstream],
        set: {
          requests: sql`${usageDaily.requests} + excluded.requests`,
          errors: sql`${usageDaily.errors} + excluded.errors`,
          promptTokens: sql`${usageDaily.promptTokens} + excluded.prompt_tokens`,
          completionTokens: sql`${usageDaily.completionTokens} + excluded.completion_tokens`,
          totalTokens: sql`${usageDaily.totalTokens} + excluded.total_tokens`,
          latencyMsSum: sql`${usageDaily.latencyMsSum} + excluded.latency_ms_sum`,
        },
      })
      .prepare()
  }

  private dateOf(at: number): string {
    if (at < this.dayStart || at >= this.dayEnd) {
      this.day = utcDate(at)
      this.dayStart = Date.parse(`${this.day}T00:00:00Z`)
      this.dayEnd = this.dayStart + 86_400_000
    }
    return this.day
  }

  /** Adds one request to the counters; resolves when it is committed. */
  record(entry: UsageEntry): Promise<void> {
    const date = this.dateOf(entry.at)
    const id = `${entry.keyId}\u0000${date}\u0000${entry.alias}\u0000${entry.upstream}`
    let row = this.pending.get(id)
    if (!row) {
      row = { keyId: entry.keyId, date, alias: entry.alias, upstream: entry.upstream, requests: 0, errors: 0, prompt: 0, completion: 0, total: 0, latency: 0 }
      this.pending.set(id, row)
    }
    row.requests++
    if (entry.error) row.errors++
    row.prompt += entry.promptTokens
    row.completion += entry.completionTokens
    row.total += entry.promptTokens + entry.completionTokens
    row.latency += Math.round(entry.latencyMs)
    this.rollups.add(entry)
    if (!this.committed) {
      this.committed = new Promise((resolve, reject) => (this.settle = { resolve, reject }))
      setImmediate(() => this.flush())
    }
    return this.committed
  }

  /** Commits whatever is pending now (also called at shutdown). */
  flush(): void {
    const rows = this.pending
    const settle = this.settle
    this.pending = new Map()
    this.committed = null
    this.settle = null
    if (rows.size === 0) return settle?.resolve()
    try {
      this.db.transaction(() => {
        for (const row of rows.values()) this.upsert.run(row)
        this.rollups.write()
      })
      settle?.resolve()
    } catch (error) {
      settle?.reject(error)
    }
  }
}

export interface UsageCounters {
  requests: number
  errors: number
  prompt_tokens: number
  completion_tokens: number
  total_tokens: number
}

export interface UsageRow extends UsageCounters {
  key_id: string
  key_prefix: string
  date: string
  alias: string
  upstream: string
  latency_ms_sum: number
}

export interface UsageQuery {
  keyId?: string
  alias?: string
  upstream?: string
  from: string
  to: string
}

/** Counter rows for a date range (inclusive), optionally for one key, with their totals. */
export function queryUsage(db: Db, query: UsageQuery): { totals: UsageCounters; data: UsageRow[] } {
  const conditions = [gte(usageDaily.date, query.from), lte(usageDaily.date, query.to)]
  if (query.keyId !== undefined) conditions.push(eq(usageDaily.keyId, query.keyId))
  if (query.alias !== undefined) conditions.push(eq(usageDaily.alias, query.alias))
  if (query.upstream !== undefined) conditions.push(eq(usageDaily.upstream, query.upstream))
  const data = db
    .select({
      key_id: usageDaily.keyId,
      key_prefix: sql<string>`coalesce(${apiKeys.prefix}, '')`,
      date: usageDaily.date,
      alias: usageDaily.alias,
      upstream: usageDaily.upstream,
      requests: usageDaily.requests,
      errors: usageDaily.errors,
      prompt_tokens: usageDaily.promptTokens,
      completion_tokens: usageDaily.completionTokens,
      total_tokens: usageDaily.totalTokens,
      latency_ms_sum: usageDaily.latencyMsSum,
    })
    .from(usageDaily)
    .leftJoin(apiKeys, eq(apiKeys.id, usageDaily.keyId))
    .where(and(...conditions))
    .orderBy(asc(usageDaily.date), asc(usageDaily.keyId), asc(usageDaily.alias), asc(usageDaily.upstream))
    .all()
  const totals: UsageCounters = { requests: 0, errors: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }
  for (const row of data) {
    totals.requests += row.requests
    totals.errors += row.errors
    totals.prompt_tokens += row.prompt_tokens
    totals.completion_tokens += row.completion_tokens
    totals.total_tokens += row.total_tokens
  }
  return { totals, data }
}

/** Quotas start from the persisted counters, so a restart does not hand out a fresh quota. */
export function usageBaseline(db: Db): QuotaBaseline {
  const requestsOn = db
    .select({ n: sql<number>`coalesce(sum(${usageDaily.requests}), 0)` })
    .from(usageDaily)
    .where(and(eq(usageDaily.keyId, sql.placeholder('keyId')), eq(usageDaily.date, sql.placeholder('day'))))
    .prepare()
  const tokensSince = db
    .select({ n: sql<number>`coalesce(sum(${usageDaily.totalTokens}), 0)` })
    .from(usageDaily)
    .where(and(eq(usageDaily.keyId, sql.placeholder('keyId')), gte(usageDaily.date, sql.placeholder('firstDay'))))
    .prepare()
  return {
    requestsOn: (keyId, day) => requestsOn.get({ keyId, day })?.n ?? 0,
    tokensSince: (keyId, firstDay) => tokensSince.get({ keyId, firstDay })?.n ?? 0,
  }
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
      throw new GatewayError(400, 'invalid_request_error', `Invalid request: ${param} must be a date like 2026-01-31, got "${value}"`, undefined, param)
    }
  }
  const days = (Date.parse(range.to) - Date.parse(range.from)) / 86_400_000
  if (days < 0) throw new GatewayError(400, 'invalid_request_error', 'Invalid request: from must not be after to', undefined, 'from')
  if (days >= MAX_RANGE_DAYS) throw new GatewayError(400, 'invalid_request_error', `Invalid request: at most ${MAX_RANGE_DAYS} days at once`, undefined, 'from')
  return range
}
