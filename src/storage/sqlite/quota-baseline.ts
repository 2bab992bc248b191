import { and, eq, gte, sql } from 'drizzle-orm'
import { usageDaily } from '../../../db/schema'
import type { QuotaBaseline } from '../../limits/limiter'
import type { Db } from './open'

/** Quotas start from the persisted daily counters, so a restart does not hand out a fresh quota. */
export function sqliteQuotaBaseline(db: Db): QuotaBaseline {
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
    requestsOn: async (keyId, day) => requestsOn.get({ keyId, day })?.n ?? 0,
    tokensSince: async (keyId, firstDay) => tokensSince.get({ keyId, firstDay })?.n ?? 0,
  }
}
