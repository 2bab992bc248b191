import type { SQLQueryBindings, Statement } from 'bun:sqlite'
import { eq, sql } from 'drizzle-orm'
import { LATENCY_BUCKETS } from '../../../db/latency'
import { usageDaily, usageJournals } from '../../../db/schema'
import type { FoldPlan, UsageStore } from '../../usage/store'
import type { Db } from './open'

export const LAT_COLUMNS = Array.from({ length: LATENCY_BUCKETS }, (_, i) => `lat_${i}`)

/**
 * Usage counters in `usage_daily` (billing, kept forever) and `usage_minute` (the dashboard's
 * rollups, pruned), with each journal's fold point in `usage_journals`: all written in one
 * transaction per fold.
 */
export class SqliteUsageStore implements UsageStore {
  private readonly upsertDay
  private readonly upsertMinute: Statement<unknown, SQLQueryBindings[]>
  private readonly readPoint
  private readonly writePoint
  private readonly deletePoint
  private readonly deleteMinutes: Statement<unknown, [number]>

  constructor(private readonly db: Db) {
    const p = (name: string) => sql.placeholder(name)
    this.upsertDay = db
      .insert(usageDaily)
      .values({
        keyId: p('keyId'),
        date: p('date'),
        alias: p('alias'),
        upstream: p('upstream'),
        requests: p('requests'),
        errors: p('errors'),
        promptTokens: p('promptTokens'),
        completionTokens: p('completionTokens'),
        totalTokens: p('totalTokens'),
        costNanos: p('costNanos'),
        cacheSavedNanos: p('cacheSavedNanos'),
        latencyMsSum: p('latencyMsSum'),
      })
      .onConflictDoUpdate({
        target: [usageDaily.keyId, usageDaily.date, usageDaily.alias, usageDaily.upstream],
        set: {
          requests: sql`${usageDaily.requests} + excluded.requests`,
          errors: sql`${usageDaily.errors} + excluded.errors`,
          promptTokens: sql`${usageDaily.promptTokens} + excluded.prompt_tokens`,
          completionTokens: sql`${usageDaily.completionTokens} + excluded.completion_tokens`,
          totalTokens: sql`${usageDaily.totalTokens} + excluded.total_tokens`,
          costNanos: sql`${usageDaily.costNanos} + excluded.cost_nanos`,
          cacheSavedNanos: sql`${usageDaily.cacheSavedNanos} + excluded.cache_saved_nanos`,
          latencyMsSum: sql`${usageDaily.latencyMsSum} + excluded.latency_ms_sum`,
        },
      })
      .prepare()
    const columns = [
      'minute',
      'key_id',
      'alias',
      'upstream',
      'requests',
      'errors',
      'prompt_tokens',
      'completion_tokens',
      'cost_nanos',
      'cache_saved_nanos',
      'latency_ms_sum',
      ...LAT_COLUMNS,
    ]
    const added = columns.slice(4).map((c) => `${c} = ${c} + excluded.${c}`)
    // Raw SQL: fourteen histogram columns are written by position, which the query builder cannot
    // express without naming each one; the columns themselves come from db/schema.ts.
    this.upsertMinute = db.$client.prepare(
      `INSERT INTO usage_minute (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})
       ON CONFLICT (minute, key_id, alias, upstream) DO UPDATE SET ${added.join(', ')}`,
    )
    const journal = sql.placeholder('journal')
    this.readPoint = db.select({ seq: usageJournals.foldedSeq }).from(usageJournals).where(eq(usageJournals.journal, journal)).prepare()
    this.writePoint = db
      .insert(usageJournals)
      .values({ journal, foldedSeq: sql.placeholder('seq') })
      .onConflictDoUpdate({ target: usageJournals.journal, set: { foldedSeq: sql`excluded.folded_seq` } })
      .prepare()
    this.deletePoint = db.delete(usageJournals).where(eq(usageJournals.journal, journal)).prepare()
    this.deleteMinutes = db.$client.prepare('DELETE FROM usage_minute WHERE minute < ?')
  }

  async fold(journal: string | null, plan: (foldedSeq: number) => FoldPlan | null): Promise<void> {
    this.db.$client
      .transaction(() => {
        const stored = journal === null ? 0 : (this.readPoint.get({ journal })?.seq ?? 0)
        const fold = plan(stored)
        if (fold === null) return
        for (const day of fold.totals.days()) this.upsertDay.run({ ...day, totalTokens: day.promptTokens + day.completionTokens })
        for (const m of fold.totals.minutes()) {
          this.upsertMinute.run(
            m.minute,
            m.keyId,
            m.alias,
            m.upstream,
            m.requests,
            m.errors,
            m.promptTokens,
            m.completionTokens,
            m.costNanos,
            m.cacheSavedNanos,
            m.latencyMsSum,
            ...m.latencyCounts,
          )
        }
        if (journal !== null) this.writePoint.run({ journal, seq: fold.seq })
      })
      .immediate()
  }

  async forgetJournal(journal: string): Promise<void> {
    this.deletePoint.run({ journal })
  }

  async pruneMinutes(before: number): Promise<number> {
    return this.deleteMinutes.run(Math.floor(before / 1000)).changes
  }
}
