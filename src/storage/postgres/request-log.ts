import { and, desc, eq, gte, inArray, lt, lte, or, sql, type SQL } from 'drizzle-orm'
import { requestLog } from '../../../db/pg/schema'
import type { LogRow } from '../../request-log/entry'
import { PRUNE_BATCH, type RequestLogStore, type RequestQuery } from '../../request-log/store'
import { guarded, type PgDb } from './open'

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

/** Rows per statement: a fold after a long outage is written in bounded pieces. */
const ROWS_PER_STATEMENT = 1000

/** One column of the rows as a single array parameter. */
const column = <K extends keyof LogRow>(rows: LogRow[], key: K): SQL => sql`${sql.param(rows.map((row) => row[key]))}`

/**
 * The rows as one array per column (unnest): nine parameters whatever the number of rows. A VALUES
 * list takes nine a row, and building it cost the instance that folds more CPU than the requests it
 * logged. A row folded again as it was (another instance folded it too) is left alone: no write.
 */
const insertRows = (rows: LogRow[]): SQL => sql`
  INSERT INTO ${requestLog} (uid, id, at, key_id, alias, upstream, status, error_type, record)
  SELECT * FROM unnest(
    ${column(rows, 'uid')}::text[], ${column(rows, 'id')}::text[], ${column(rows, 'at')}::bigint[],
    ${column(rows, 'keyId')}::text[], ${column(rows, 'alias')}::text[], ${column(rows, 'upstream')}::text[],
    ${column(rows, 'status')}::integer[], ${column(rows, 'errorType')}::text[], ${column(rows, 'record')}::text[]
  )
  ON CONFLICT (uid) DO UPDATE SET status = excluded.status, error_type = excluded.error_type, record = excluded.record
  WHERE ${requestLog.record} IS DISTINCT FROM excluded.record`

/** The request log on Postgres, shared by the instances of a cluster. */
export class PgRequestLogStore implements RequestLogStore {
  constructor(private readonly db: PgDb) {}

  put(rows: LogRow[]): Promise<void> {
    if (rows.length === 0) return Promise.resolve()
    return guarded(() =>
      this.db.transaction(async (tx) => {
        for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) await tx.execute(insertRows(rows.slice(i, i + ROWS_PER_STATEMENT)))
      }),
    )
  }

  list(query: RequestQuery): Promise<LogRow[]> {
    return guarded(() => this.db.select().from(requestLog).where(filterOf(query)).orderBy(desc(requestLog.at), desc(requestLog.uid)).limit(query.limit))
  }

  get(id: string): Promise<LogRow | null> {
    return guarded(async () => {
      const [row] = await this.db.select().from(requestLog).where(eq(requestLog.id, id)).orderBy(desc(requestLog.at), desc(requestLog.uid)).limit(1)
      return row ?? null
    })
  }

  prune(before: number): Promise<number> {
    return guarded(async () => {
      const old = this.db.select({ uid: requestLog.uid }).from(requestLog).where(lt(requestLog.at, before)).limit(PRUNE_BATCH)
      const removed = await this.db.delete(requestLog).where(inArray(requestLog.uid, old)).returning({ uid: requestLog.uid })
      return removed.length
    })
  }
}
