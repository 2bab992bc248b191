import { and, desc, eq, gte, lt, lte, or, type SQL } from 'drizzle-orm'
import { requestLog } from '../../../db/schema'
import type { LogRow } from '../../request-log/entry'
import type { Database } from 'bun:sqlite'
import { inThreadWriter } from '../../request-log/journal'
import { PRUNE_BATCH, type RequestLogStore, type RequestQuery, type RequestWriter } from '../../request-log/store'
import { workerWriter } from './request-log-writer'
import { type Db, openSqlite, type SqliteDatabase } from './open'

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

/** Writes rows in one transaction, through one prepared statement (drizzle's builder cost 4 times as much a row); a row whose uid is there replaces it. */
export function rowWriter(sqlite: Database): (rows: LogRow[]) => void {
  const insert = sqlite.prepare<never, [string, string, number, string | null, string | null, string | null, number, string | null, string]>(
    `INSERT INTO request_log (uid, id, at, key_id, alias, upstream, status, error_type, record) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
     ON CONFLICT (uid) DO UPDATE SET status = excluded.status, error_type = excluded.error_type, record = excluded.record
     WHERE request_log.record IS NOT excluded.record`,
  )
  return sqlite.transaction((rows: LogRow[]) => {
    for (const r of rows) insert.run(r.uid, r.id, r.at, r.keyId, r.alias, r.upstream, r.status, r.errorType, r.record)
  })
}

/**
 * The request log of a SQLite database: in a file of its own beside it (`<database>.requests.sqlite`,
 * the same schema, of which only request_log is used), so that writing thousands of records never
 * holds the lock that usage, keys and the config write under (a writer waiting on SQLite's lock
 * sleeps, on the event loop); in memory, in the database itself.
 */
export function openSqliteRequestLog(database: SqliteDatabase): { store: SqliteRequestLogStore; close(): void } {
  if (database.path === null) return { store: new SqliteRequestLogStore(database.db, null), close: () => {} }
  const own = openSqlite(`${database.path}.requests.sqlite`)
  return { store: new SqliteRequestLogStore(own.db, own.path), close: () => own.close() }
}

/** The request log on SQLite. A file's journal is written by a worker thread of its own (request-log-writer.ts). */
export class SqliteRequestLogStore implements RequestLogStore {
  private readonly pruneOld
  private readonly putAll: (rows: LogRow[]) => void

  constructor(
    private readonly db: Db,
    /** The database file; null in memory (then there is no worker: another connection would see another database). */
    private readonly path: string | null,
  ) {
    this.pruneOld = db.$client.query<never, { before: number; batch: number }>(
      'DELETE FROM request_log WHERE uid IN (SELECT uid FROM request_log WHERE at < $before LIMIT $batch)',
    )
    this.putAll = rowWriter(db.$client)
  }

  async put(rows: LogRow[]): Promise<void> {
    if (rows.length > 0) this.putAll(rows)
  }

  writer(): RequestWriter {
    return this.path === null ? inThreadWriter(this) : workerWriter(this.path)
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
