import { and, eq, gte, sql } from 'drizzle-orm'
import { usageDaily } from '../../../db/schema'
import type { QuotaBaseline } from '../../limits/limiter'
import { type KeyMonthRow, periodUsageOf, periodUsageQuery } from '../period-usage'
import type { Db } from './open'

/** Quotas and budgets start from the persisted daily counters, so a restart hands out no fresh quota or budget. */
export function sqliteQuotaBaseline(db: Db): QuotaBaseline {
  const day = db
    .select({ requests: sql<number>`coalesce(sum(${usageDaily.requests}), 0)`, costNanos: sql<number>`coalesce(sum(${usageDaily.costNanos}), 0)` })
    .from(usageDaily)
    .where(and(eq(usageDaily.keyId, sql.placeholder('keyId')), eq(usageDaily.date, sql.placeholder('day'))))
    .prepare()
  const month = db
    .select({ tokens: sql<number>`coalesce(sum(${usageDaily.totalTokens}), 0)`, costNanos: sql<number>`coalesce(sum(${usageDaily.costNanos}), 0)` })
    .from(usageDaily)
    .where(and(eq(usageDaily.keyId, sql.placeholder('keyId')), gte(usageDaily.date, sql.placeholder('firstDay'))))
    .prepare()
  return {
    dayUsage: async (keyId, date) => day.get({ keyId, day: date }) ?? { requests: 0, costNanos: 0 },
    monthUsage: async (keyId, firstDay) => month.get({ keyId, firstDay }) ?? { tokens: 0, costNanos: 0 },
    allKeys: async (day, firstDay) => periodUsageOf(db.all<KeyMonthRow>(periodUsageQuery(day, firstDay))),
  }
}
