import { type SQL, sql } from 'drizzle-orm'
import type { PeriodUsage } from '../limits/limiter'

/** One key's sums over the month's daily rows, today's apart: what both databases' seed queries return. */
export interface KeyMonthRow {
  key_id: string
  requests_today: number | string
  cost_today: number | string
  tokens_month: number | string
  cost_month: number | string
}

/** The seed of a shared limiter from per-key rows; numbers may come back as strings (Postgres bigint sums). */
export function periodUsageOf(rows: KeyMonthRow[]): Map<string, PeriodUsage> {
  return new Map(
    rows.map((row) => [
      row.key_id,
      {
        requestsToday: Number(row.requests_today),
        costToday: Number(row.cost_today),
        tokensThisMonth: Number(row.tokens_month),
        costThisMonth: Number(row.cost_month),
      },
    ]),
  )
}

/** The seed query, in SQL both databases read. */
export const periodUsageQuery = (today: string, firstDay: string): SQL => sql`
  SELECT key_id,
    coalesce(sum(CASE WHEN date = ${today} THEN requests ELSE 0 END), 0) AS requests_today,
    coalesce(sum(CASE WHEN date = ${today} THEN cost_nanos ELSE 0 END), 0) AS cost_today,
    coalesce(sum(total_tokens), 0) AS tokens_month,
    coalesce(sum(cost_nanos), 0) AS cost_month
  FROM usage_daily WHERE date >= ${firstDay} GROUP BY key_id`
