/**
 * The request log's port: where records end up (SQLite, or Postgres for a cluster) and how the
 * admin API reads them. Adapters: src/storage/sqlite/request-log.ts, src/storage/postgres/request-log.ts.
 */
import { invalidRequest } from '../errors'
import type { LogRow } from './entry'

/** Records per page when the caller does not say, and at most. */
export const DEFAULT_PAGE = 50
export const MAX_PAGE = 500

/** Rows a single prune statement removes at most, so a backlog never holds the database for long. */
export const PRUNE_BATCH = 5000

/** Where a page starts: after this record, in the listing's order (newest first). */
export interface Cursor {
  at: number
  uid: string
}

/** A status filter: one code, or a class (`4xx`) as the range of codes it covers. */
export interface StatusRange {
  from: number
  to: number
}

export interface RequestQuery {
  keyId?: string
  alias?: string
  upstream?: string
  status?: StatusRange
  errorType?: string
  /** End times, ms since the epoch, inclusive. */
  since?: number
  until?: number
  limit: number
  after?: Cursor
}

/** Where a journal's new lines are, for a writer that reads them from the file itself. */
export interface JournalRange {
  path: string
  /** Byte offsets: from the end of what was written before, to the end of the last complete append. */
  from: number
  to: number
}

/**
 * Writes a journal's batches into a store: on this thread (the rows wait in memory until `flush`),
 * or on a thread of the store's own that reads them from the journal file (SQLite: see
 * src/storage/sqlite/request-log-writer.ts), so the event loop neither copies them nor holds a
 * transaction of thousands of rows.
 */
export interface RequestWriter {
  /** A batch was appended (and, when there is a file, written to it). */
  add(rows: LogRow[]): void
  /** Writes every batch added so far, found in `range` when there is a file. Rejects when the store failed: nothing is lost, the next flush writes it. */
  flush(range: JournalRange | null): Promise<void>
  close(): void
}

export interface RequestLogStore {
  /** A writer on a thread of its own, when the store has one (a SQLite file); else batches are written on this thread. */
  writer?(): RequestWriter
  /** Writes rows; a row whose uid is there already replaces it (a record corrected, or a journal folded twice). */
  put(rows: LogRow[]): Promise<void>
  /** Up to `query.limit` rows matching it, newest first (end time, then uid), after its cursor. */
  list(query: RequestQuery): Promise<LogRow[]>
  /** The newest record with this request id. */
  get(id: string): Promise<LogRow | null>
  /** Removes up to PRUNE_BATCH records that ended before `before` (ms); returns how many. */
  prune(before: number): Promise<number>
}

/** A page's cursor, opaque to callers: base64url of `at.uid`. */
export const encodeCursor = (row: Pick<LogRow, 'at' | 'uid'>): string => Buffer.from(`${row.at}.${row.uid}`).toString('base64url')

export function decodeCursor(text: string): Cursor {
  const decoded = Buffer.from(text, 'base64url').toString()
  const dot = decoded.indexOf('.')
  const at = Number(decoded.slice(0, dot))
  if (dot < 1 || !Number.isSafeInteger(at) || decoded.length === dot + 1) {
    throw invalidRequest('Invalid request: cursor is not one this API gave out', { param: 'cursor' })
  }
  return { at, uid: decoded.slice(dot + 1) }
}

/** `429` is that code; `4xx` is 400 to 499. */
export function parseStatus(text: string): StatusRange {
  if (/^[1-5]xx$/i.test(text)) {
    const from = Number(text[0]) * 100
    return { from, to: from + 99 }
  }
  if (/^[1-5]\d\d$/.test(text)) return { from: Number(text), to: Number(text) }
  throw invalidRequest('Invalid request: status must be a code (429) or a class (4xx)', { param: 'status' })
}

/** An RFC 3339 time or ms since the epoch. */
export function parseTime(text: string, param: string): number {
  const ms = /^\d+$/.test(text) ? Number(text) : Date.parse(text)
  if (!Number.isFinite(ms)) throw invalidRequest(`Invalid request: ${param} must be an RFC 3339 time (2026-11-26T14:00:00Z) or ms since the epoch`, { param })
  return ms
}

/** The query strings of `GET /admin/requests`, as the store takes them. */
export interface RequestQueryText {
  key_id?: string
  alias?: string
  upstream?: string
  status?: string
  error_type?: string
  since?: string
  until?: string
  limit?: number
  cursor?: string
}

export function requestQuery(q: RequestQueryText): RequestQuery {
  return {
    keyId: q.key_id || undefined,
    alias: q.alias || undefined,
    upstream: q.upstream || undefined,
    status: q.status ? parseStatus(q.status) : undefined,
    errorType: q.error_type || undefined,
    since: q.since ? parseTime(q.since, 'since') : undefined,
    until: q.until ? parseTime(q.until, 'until') : undefined,
    limit: Math.min(q.limit ?? DEFAULT_PAGE, MAX_PAGE),
    after: q.cursor ? decodeCursor(q.cursor) : undefined,
  }
}
