import { and, desc, eq, gte, lt, lte, or, sql, type SQL } from 'drizzle-orm'
import { requestLog } from '../../../db/schema'
import type { LogRow } from '../../request-log/entry'
import { PRUNE_BATCH, type RequestLogStore, type RequestQuery } from '../../request-log/store'
import type { Db } from './open'

/** The filters of a listing, as one condition (undefined: none). */
function filterOf(query: RequestQuery): SQL | undefined {
  const conditions: (SQL | undefined)[] = []
  if (query.keyId !== undefined) conditions.push(eq(requestLog.keyId, query.keyId))
  if (query.alias !== undefined) conditions.push(eq(requestLog.alias, query.alias))
  if (query.upstream !== undefined) conditions.push(eq(requestLog.upstream, query.upstream))
  if (query.errorType !== undefined) conditions.push(eq(requestLog.errorType, query.errorType))
  if (query.status !== undefined) conditions.push(gte(requestLog.status, query.status.from), lte(requestLog.status, query.status.to))
  if (query.since !== undefined) conditions.push(gte(requestLog.at, query.since))
  if (query.until !== undefined) conditions.push(lte(requestLog.at, query.until))
  const after = query.after
  if (after !== undefined) conditions.push(or(lt(requestLog.at, after.at), and(eq(requestLog.at, after.at), lt(requestLog.uid, after.uid))))
  return conditions.length === 0 ? undefined : and(...conditions)
}

/** The request log on SQLite: rows written in one transaction per fold. */
export class SqliteRequestLogStore implements RequestLogStore {
  private readonly pruneOld

  constructor(private readonly db: Db) {
    this.pruneOld = db.$client.query<never, { before: number; batch: number }>(
      'DELETE FROM request_log WHERE uid IN (SELECT uid FROM request_log WHERE at < $before LIMIT $batch)',
    )
  }

  async put(rows: LogRow[]): Promise<void> {
    if (rows.length === 0) return
    this.db.transaction((tx) => {
      // 9 columns a row: well under SQLite's 32,766 variables per statement.
      for (let i = 0; i < rows.length; i += 500) {
        tx.insert(requestLog)
          .values(rows.slice(i, i + 500))
          .onConflictDoUpdate({
            target: requestLog.uid,
            set: { status: sql`excluded.status`, errorType: sql`excluded.error_type`, record: sql`excluded.record` },
          })
          .run()
      }
    })
  }

  async list(query: RequestQuery): Promise<LogRow[]> {
    return this.db.select().from(requestLog).where(filterOf(query)).orderBy(desc(requestLog.at), desc(requestLog.uid)).limit(query.limit).all()
  }

  async get(id: string): Promise<LogRow | null> {
    return this.db.select().from(requestLog).where(eq(requestLog.id, id)).orderBy(desc(requestLog.at), desc(requestLog.uid)).limit(1).get() ?? null
  }

  async prune(before: number): Promise<number> {
    return this.pruneOld.run({ before, batch: PRUNE_BATCH }).changes
  }
}
