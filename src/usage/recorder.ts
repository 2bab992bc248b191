import { and, asc, eq, gte, lte, sql } from 'drizzle-orm'
import { apiKeys, usageDaily } from '../../db/schema'
import type { Db } from '../db'
import { GatewayError } from '../errors'
import type { QuotaBaseline } from '../limits/limiter'

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

/**
 * Increments the day's counters in one statement, committed before the caller's response is
 * finished, so a response the client received is counted even if the process dies right after.
 */
export class UsageRecorder {
  private readonly upsert

  constructor(db: Db) {
    const p = (name: string) => sql.placeholder(name)
    this.upsert = db
      .insert(usageDaily)
      .values({
        keyId: p('keyId'),
        date: p('date'),
        alias: p('alias'),
        upstream: p('upstream'),
        requests: 1,
        errors: p('errors'),
        promptTokens: p('prompt'),
        completionTokens: p('completion'),
        totalTokens: p('total'),
        latencyMsSum: p('latency'),
      })
      .onConflictDoUpdate({
        target: [usageDaily.keyId, usageDaily.date, usageDaily.alias, usageDaily.upstream],
        set: {
          requests: sql`${usageDaily.requests} + 1`,
          errors: sql`${usageDaily.errors} + excluded.errors`,
          promptTokens: sql`${usageDaily.promptTokens} + excluded.prompt_tokens`,
          completionTokens: sql`${usageDaily.completionTokens} + excluded.completion_tokens`,
          totalTokens: sql`${usageDaily.totalTokens} + excluded.total_tokens`,
          latencyMsSum: sql`${usageDaily.latencyMsSum} + excluded.latency_ms_sum`,
        },
      })
      .prepare()
  }

  record(entry: UsageEntry): void {
    this.upsert.run({
      keyId: entry.keyId,
      date: utcDate(entry.at),
      alias: entry.alias,
      upstream: entry.upstream,
      errors: entry.error ? 1 : 0,
      prompt: entry.promptTokens,
      completion: entry.completionTokens,
      total: entry.promptTokens + entry.completionTokens,
      latency: Math.round(entry.latencyMs),
    })
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
