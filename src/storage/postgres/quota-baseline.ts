import { and, eq, gte, sql } from 'drizzle-orm'
import { usageDaily } from '../../../db/pg/schema'
import type { QuotaBaseline } from '../../limits/limiter'
import { type KeyMonthRow, periodUsageOf, periodUsageQuery } from '../period-usage'
import { guarded, type PgDb } from './open'

/** Quotas and budgets start from the persisted daily counters, so a restart hands out no fresh quota or budget. */
export function pgQuotaBaseline(db: PgDb): QuotaBaseline {
  // Sums of bigint columns are numeric in Postgres: cast back to bigint, which drizzle reads as a number.
  const sum = (column: typeof usageDaily.requests) => sql<string>`coalesce(sum(${column}), 0)::bigint`
  return {
    dayUsage: (keyId, day) =>
      guarded(async () => {
        const [row] = await db
          .select({ requests: sum(usageDaily.requests), costNanos: sum(usageDaily.costNanos) })
          .from(usageDaily)
          .where(and(eq(usageDaily.keyId, keyId), eq(usageDaily.date, day)))
        return { requests: Number(row?.requests ?? 0), costNanos: Number(row?.costNanos ?? 0) }
      }),
    monthUsage: (keyId, firstDay) =>
      guarded(async () => {
        const [row] = await db
          .select({ tokens: sum(usageDaily.totalTokens), costNanos: sum(usageDaily.costNanos) })
          .from(usageDaily)
          .where(and(eq(usageDaily.keyId, keyId), gte(usageDaily.date, firstDay)))
        return { tokens: Number(row?.tokens ?? 0), costNanos: Number(row?.costNanos ?? 0) }
      }),
    allKeys: (day, firstDay) => guarded(async () => periodUsageOf((await db.execute(periodUsageQuery(day, firstDay))) as unknown as KeyMonthRow[])),
  }
}
