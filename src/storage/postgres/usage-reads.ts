import { and, asc, eq, getTableColumns, gte, inArray, lt, lte, sql, type SQL } from 'drizzle-orm'
import type { PgColumn } from 'drizzle-orm/pg-core'
import { LATENCY_BUCKETS } from '../../../db/latency'
import { apiKeys, usageDaily, usageMinute } from '../../../db/pg/schema'
import type { BucketSums, StoredUsageRow, UsageFilter, UsageQuery, UsageReadStore } from '../../usage/store'
import { guarded, type PgDb } from './open'

/** The filter as conditions on the columns both usage tables share. */
function filterOn(table: typeof usageDaily | typeof usageMinute, filter: UsageFilter): SQL[] {
  const conditions: SQL[] = []
  if (filter.keyId !== undefined) conditions.push(eq(table.keyId, filter.keyId))
  if (filter.alias !== undefined) conditions.push(eq(table.alias, filter.alias))
  if (filter.upstream !== undefined) conditions.push(eq(table.upstream, filter.upstream))
  return conditions
}

/** Sums come back as numeric (a string in postgres.js): added up as bigint and read as numbers. */
const total = (column: PgColumn) => sql<string>`coalesce(sum(${column}), 0)::bigint`

const minuteColumns: Record<string, PgColumn> = getTableColumns(usageMinute)
const LAT = Array.from({ length: LATENCY_BUCKETS }, (_, i) => minuteColumns[`lat${i}`]!)

/** Reports and series from the usage tables on Postgres. */
export class PgUsageReads implements UsageReadStore {
  constructor(private readonly db: PgDb) {}

  rows(query: UsageQuery): Promise<StoredUsageRow[]> {
    return guarded(() =>
      this.db
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
        .where(
          and(
            gte(usageDaily.date, query.from),
            lte(usageDaily.date, query.to),
            query.keyIds === undefined ? undefined : inArray(usageDaily.keyId, query.keyIds),
            ...filterOn(usageDaily, query),
          ),
        )
        .orderBy(asc(usageDaily.date), asc(usageDaily.keyId), asc(usageDaily.alias), asc(usageDaily.upstream)),
    )
  }

  minuteBuckets(step: number, from: number, to: number, filter: UsageFilter): Promise<BucketSums[]> {
    return guarded(async () => {
      // The step as a literal, not a parameter: Postgres matches the SELECT and GROUP BY expressions
      // by their text, and two parameters are two different expressions to it.
      const bucket = sql<number>`(${usageMinute.minute} / ${sql.raw(String(Math.trunc(step)))})`
      const rows = await this.db
        .select({
          bucket: sql<string>`${bucket}::bigint`,
          requests: total(usageMinute.requests),
          errors: total(usageMinute.errors),
          prompt: total(usageMinute.promptTokens),
          completion: total(usageMinute.completionTokens),
          cost: total(usageMinute.costNanos),
          saved: total(usageMinute.cacheSavedNanos),
          latency: sql<string[]>`array[${sql.join(
            LAT.map((column) => total(column)),
            sql`, `,
          )}]`,
        })
        .from(usageMinute)
        .where(and(gte(usageMinute.minute, from), lt(usageMinute.minute, to), ...filterOn(usageMinute, filter)))
        .groupBy(bucket)
      return rows.map((row) => ({
        bucket: Number(row.bucket),
        requests: Number(row.requests),
        errors: Number(row.errors),
        promptTokens: Number(row.prompt),
        completionTokens: Number(row.completion),
        costNanos: Number(row.cost),
        cacheSavedNanos: Number(row.saved),
        latencyCounts: row.latency.map(Number),
      }))
    })
  }

  dayBuckets(from: string, to: string, filter: UsageFilter): Promise<BucketSums[]> {
    return guarded(async () => {
      const rows = await this.db
        .select({
          date: usageDaily.date,
          requests: total(usageDaily.requests),
          errors: total(usageDaily.errors),
          prompt: total(usageDaily.promptTokens),
          completion: total(usageDaily.completionTokens),
          cost: total(usageDaily.costNanos),
          saved: total(usageDaily.cacheSavedNanos),
        })
        .from(usageDaily)
        .where(and(gte(usageDaily.date, from), lte(usageDaily.date, to), ...filterOn(usageDaily, filter)))
        .groupBy(usageDaily.date)
      return rows.map((row) => ({
        bucket: Date.parse(`${row.date}T00:00:00Z`) / 86_400_000,
        requests: Number(row.requests),
        errors: Number(row.errors),
        promptTokens: Number(row.prompt),
        completionTokens: Number(row.completion),
        costNanos: Number(row.cost),
        cacheSavedNanos: Number(row.saved),
        latencyCounts: [],
      }))
    })
  }
}
