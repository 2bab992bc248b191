import { and, asc, eq, gte, inArray, lte, sql } from 'drizzle-orm'
import { apiKeys, usageDaily } from '../../../db/schema'
import type { BucketSums, StoredUsageRow, UsageFilter, UsageQuery, UsageReadStore } from '../../usage/store'
import type { Db } from './open'
import { LAT_COLUMNS } from './usage'

/** The filter as SQL conditions on columns of the usage tables, with their parameters. */
function filterSql(filter: UsageFilter): { where: string; params: string[] } {
  const clauses: string[] = []
  const params: string[] = []
  for (const [column, value] of [
    ['key_id', filter.keyId],
    ['alias', filter.alias],
    ['upstream', filter.upstream],
  ] as const) {
    if (value !== undefined) {
      clauses.push(`AND ${column} = ?`)
      params.push(value)
    }
  }
  return { where: clauses.join(' '), params }
}

/** Reports and series from the usage tables. */
export class SqliteUsageReads implements UsageReadStore {
  constructor(private readonly db: Db) {}

  async rows(query: UsageQuery): Promise<StoredUsageRow[]> {
    const conditions = [gte(usageDaily.date, query.from), lte(usageDaily.date, query.to)]
    if (query.keyId !== undefined) conditions.push(eq(usageDaily.keyId, query.keyId))
    if (query.keyIds !== undefined) conditions.push(inArray(usageDaily.keyId, query.keyIds))
    if (query.alias !== undefined) conditions.push(eq(usageDaily.alias, query.alias))
    if (query.upstream !== undefined) conditions.push(eq(usageDaily.upstream, query.upstream))
    return this.db
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
        cost_nanos: usageDaily.costNanos,
        cache_saved_nanos: usageDaily.cacheSavedNanos,
        latency_ms_sum: usageDaily.latencyMsSum,
      })
      .from(usageDaily)
      .leftJoin(apiKeys, eq(apiKeys.id, usageDaily.keyId))
      .where(and(...conditions))
      .orderBy(asc(usageDaily.date), asc(usageDaily.keyId), asc(usageDaily.alias), asc(usageDaily.upstream))
      .all()
  }

  async minuteBuckets(step: number, from: number, to: number, filter: UsageFilter): Promise<BucketSums[]> {
    const { where, params } = filterSql(filter)
    const rows = this.db.$client
      .prepare(
        `SELECT (minute / ?1) AS b, sum(requests) AS requests, sum(errors) AS errors, sum(prompt_tokens) AS prompt, sum(completion_tokens) AS completion, sum(cost_nanos) AS cost,
                sum(cache_saved_nanos) AS saved, ${LAT_COLUMNS.map((c) => `sum(${c}) AS ${c}`).join(', ')}
         FROM usage_minute WHERE minute >= ?2 AND minute < ?3 ${where} GROUP BY b`,
      )
      .all(step, from, to, ...params) as Record<string, number>[]
    return rows.map((row) => ({
      bucket: row.b!,
      requests: row.requests!,
      errors: row.errors!,
      promptTokens: row.prompt!,
      completionTokens: row.completion!,
      costNanos: row.cost!,
      cacheSavedNanos: row.saved!,
      latencyCounts: LAT_COLUMNS.map((c) => row[c]!),
    }))
  }

  async dayBuckets(from: string, to: string, filter: UsageFilter): Promise<BucketSums[]> {
    const { where, params } = filterSql(filter)
    const rows = this.db.$client
      .prepare(
        `SELECT date, sum(requests) AS requests, sum(errors) AS errors, sum(prompt_tokens) AS prompt, sum(completion_tokens) AS completion, sum(cost_nanos) AS cost,
                sum(cache_saved_nanos) AS saved
         FROM usage_daily WHERE date >= ?1 AND date <= ?2 ${where} GROUP BY date`,
      )
      .all(from, to, ...params) as { date: string; requests: number; errors: number; prompt: number; completion: number; cost: number; saved: number }[]
    return rows.map((row) => ({
      bucket: Date.parse(`${row.date}T00:00:00Z`) / 86_400_000,
      requests: row.requests,
      errors: row.errors,
      promptTokens: row.prompt,
      completionTokens: row.completion,
      costNanos: row.cost,
      cacheSavedNanos: row.saved,
      latencyCounts: [],
    }))
  }
}
