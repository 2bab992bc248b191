import { eq, getTableColumns, lt, sql, type SQL } from 'drizzle-orm'
import type { PgColumn } from 'drizzle-orm/pg-core'
import { LATENCY_BUCKETS } from '../../../db/latency'
import { usageDaily, usageJournals, usageMinute } from '../../../db/pg/schema'
import type { FoldPlan, UsageStore } from '../../usage/store'
import { guarded, type PgDb } from './open'

/** Rows per INSERT: well under Postgres's 65,535 parameters with the minute table's 24 columns. */
const ROWS_PER_STATEMENT = 1000

/** `column = table.column + excluded.column` for every counter: an upsert adds, never overwrites. */
function adding(table: string, columns: Record<string, PgColumn>): Record<string, SQL> {
  return Object.fromEntries(Object.entries(columns).map(([field, column]) => [field, sql.raw(`"${table}"."${column.name}" + excluded."${column.name}"`)]))
}

const DAY_COUNTERS = {
  requests: usageDaily.requests,
  errors: usageDaily.errors,
  promptTokens: usageDaily.promptTokens,
  completionTokens: usageDaily.completionTokens,
  totalTokens: usageDaily.totalTokens,
  costNanos: usageDaily.costNanos,
  cacheSavedNanos: usageDaily.cacheSavedNanos,
  latencyMsSum: usageDaily.latencyMsSum,
}
const MINUTE_COUNTERS: Record<string, PgColumn> = {
  requests: usageMinute.requests,
  errors: usageMinute.errors,
  promptTokens: usageMinute.promptTokens,
  completionTokens: usageMinute.completionTokens,
  costNanos: usageMinute.costNanos,
  cacheSavedNanos: usageMinute.cacheSavedNanos,
  latencyMsSum: usageMinute.latencyMsSum,
  ...Object.fromEntries(Array.from({ length: LATENCY_BUCKETS }, (_, i) => [`lat${i}`, (getTableColumns(usageMinute) as Record<string, PgColumn>)[`lat${i}`]!])),
}

function* chunks<T>(rows: T[]): Generator<T[]> {
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) yield rows.slice(i, i + ROWS_PER_STATEMENT)
}

/**
 * Usage counters on Postgres, with each usage log's fold point, all written in one transaction
 * per fold. The fold point's row is locked first (SELECT ... FOR UPDATE): instances folding the
 * same log at once take turns, and each adds only what lies past the point it finds.
 */
export class PgUsageStore implements UsageStore {
  constructor(private readonly db: PgDb) {}

  fold(journal: string | null, plan: (foldedSeq: number) => FoldPlan | null): Promise<void> {
    return guarded(() =>
      this.db.transaction(async (tx) => {
        let stored = 0
        if (journal !== null) {
          await tx.insert(usageJournals).values({ journal, foldedSeq: 0 }).onConflictDoNothing()
          const [point] = await tx.select({ seq: usageJournals.foldedSeq }).from(usageJournals).where(eq(usageJournals.journal, journal)).for('update')
          stored = point?.seq ?? 0
        }
        const fold = plan(stored)
        if (fold === null) return
        const minutes = [...fold.totals.minutes()].map(({ latencyCounts, ...row }) => ({
          ...row,
          ...Object.fromEntries(latencyCounts.map((n, i) => [`lat${i}`, n])),
        }))
        for (const rows of chunks(minutes)) {
          await tx
            .insert(usageMinute)
            .values(rows)
            .onConflictDoUpdate({
              target: [usageMinute.minute, usageMinute.keyId, usageMinute.alias, usageMinute.upstream],
              set: adding('usage_minute', MINUTE_COUNTERS),
            })
        }
        const days = fold.totals.days().map((day) => ({ ...day, totalTokens: day.promptTokens + day.completionTokens }))
        for (const rows of chunks(days)) {
          await tx
            .insert(usageDaily)
            .values(rows)
            .onConflictDoUpdate({
              target: [usageDaily.keyId, usageDaily.date, usageDaily.alias, usageDaily.upstream],
              set: adding('usage_daily', DAY_COUNTERS),
            })
        }
        if (journal !== null) await tx.update(usageJournals).set({ foldedSeq: fold.seq }).where(eq(usageJournals.journal, journal))
      }),
    )
  }

  forgetJournal(journal: string): Promise<void> {
    return guarded(async () => void (await this.db.delete(usageJournals).where(eq(usageJournals.journal, journal))))
  }

  pruneMinutes(before: number): Promise<number> {
    return guarded(async () => (await this.db.execute(sql`DELETE FROM ${usageMinute} WHERE ${lt(usageMinute.minute, Math.floor(before / 1000))}`)).count)
  }
}
