import { AppendLog, batchLine, foldOtherJournals, listJournalFiles, readBatches } from '../journal/append-log'
import { type LogRow, logRowOf, type StoredRequest } from './entry'
import type { RequestLogStore, RequestWriter } from './store'

/** The journals' kind: `<database>.requests-<id>.log`. */
const KIND = 'requests'

/** A journal whose written part passed this many bytes while appends kept coming is retired for a fresh one (see RequestJournal). */
export const ROTATE_AT_BYTES = 8 * 1024 * 1024

/**
 * A row as a journal line holds it: its uid (letters, digits and `-`: nothing to escape), its time,
 * and its record's JSON as made once; the filter columns are read back from the record.
 */
const lineOf = ({ uid, at, record }: LogRow): string => `["${uid}",${at},${record}]`

/** A batch's rows as read back; throws on what is not one (the line is then taken as torn). */
export function rowsOf(payload: unknown): LogRow[] {
  return (payload as [string, number, StoredRequest][]).map(([uid, at, record]) => {
    if (typeof uid !== 'string' || typeof at !== 'number' || typeof record?.id !== 'string' || typeof record.status !== 'number')
      throw new Error('not a record')
    return logRowOf(uid, at, record)
  })
}

/** Rows as one batch's JSON payload (the journal's, and the Redis stream's). */
export const payloadOf = (rows: LogRow[]): string => `[${rows.map(lineOf).join(',')}]`

/** Writes batches on this thread: their rows wait in memory until a flush puts them in the store. */
export function inThreadWriter(store: RequestLogStore): RequestWriter {
  let pending: LogRow[] = []
  return {
    add(rows) {
      for (const row of rows) pending.push(row)
    },
    async flush() {
      const rows = pending
      pending = []
      try {
        await store.put(rows)
      } catch (error) {
        pending = rows.concat(pending)
        throw error
      }
    },
    close() {},
  }
}

/** The rows of a journal's text: its complete lines, each a batch (`[seq, payload]`); stops at a torn one. */
export function rowsInText(text: string): LogRow[] {
  const rows: LogRow[] = []
  for (const line of text.split('\n')) {
    if (line === '') continue
    try {
      for (const row of rowsOf((JSON.parse(line) as [number, unknown])[1])) rows.push(row)
    } catch {
      break
    }
  }
  return rows
}

/**
 * This process's request log journal: rows appended here (journal/append-log.ts) are durable once
 * `append` returned, and are written into the store by its writer (on a thread of its own for a
 * SQLite file), every second and before every read; the file is emptied once all it holds is
 * written. Rows carry their own unique id, so writing a journal twice (a process killed between the
 * store's commit and emptying its file) stores nothing twice. Without a file (an in-memory database)
 * rows only wait in the writer.
 *
 * A writer on its own thread writes while this thread appends: under sustained load a fold rarely
 * ends with nothing appended during it, and the file would only ever grow. So a file whose written
 * part passed ROTATE_AT_BYTES is retired: appends go to a fresh file, and the next fold writes the
 * retired file's last lines and deletes it.
 */
export class RequestJournal {
  private seq = 0
  /** Bytes in the file, and how many of them are written into the store. */
  private bytes = 0
  private written = 0
  /** A file appends no longer go to: its lines from `from` to `to` are still to be written, then it is deleted. */
  private retired: { file: AppendLog; from: number; to: number } | null = null

  private constructor(
    private file: AppendLog | null,
    private readonly base: string | null,
    private readonly writer: RequestWriter,
    private readonly rotateAtBytes: number,
  ) {}

  /** This process's journal beside `base` (the database file, or the local data folder; null: memory only), written into `store`. */
  static open(base: string | null, store: RequestLogStore, rotateAtBytes = ROTATE_AT_BYTES): RequestJournal {
    const file = base === null ? null : AppendLog.create(base, KIND)
    return new RequestJournal(file, base, store.writer?.() ?? inThreadWriter(store), rotateAtBytes)
  }

  get id(): string | null {
    return this.file?.id ?? null
  }

  /** Appends rows in one write; they are durable when this returns. Throws when the write failed (nothing of it is kept). */
  append(rows: LogRow[]): void {
    if (this.file) {
      this.bytes += this.file.append(batchLine(this.seq + 1, payloadOf(rows)))
    }
    this.seq++
    this.writer.add(rows)
  }

  /**
   * Writes what waits into the store, and empties the file when nothing came meanwhile, or retires
   * it once it is long (see the class). A failed write keeps it all for the next fold. One fold at a
   * time (RequestLog runs them so): two at once would both delete a retired file.
   */
  async fold(): Promise<void> {
    const seq = this.seq
    const to = this.bytes
    const retired = this.retired
    if (retired) {
      await this.writer.flush({ path: retired.file.path, from: retired.from, to: retired.to })
      this.retired = null
      retired.file.remove()
    }
    await this.writer.flush(this.file && { path: this.file.path, from: this.written, to })
    this.written = to
    if (!this.file) return
    // Batches appended while the store wrote are past `to`: the file is emptied only when there are none.
    if (this.seq === seq) {
      this.file.truncate()
      this.bytes = this.written = 0
    } else if (this.written >= this.rotateAtBytes) {
      this.retire(this.file)
    }
  }

  /** Sends appends to a fresh file; `file`'s lines past what is written go with the next fold. */
  private retire(file: AppendLog): void {
    let fresh: AppendLog
    try {
      fresh = AppendLog.create(this.base!, KIND)
    } catch {
      // No file can be made now (no descriptor left, a full disk): appends go on to this one, and
      // the next fold tries again. The write itself succeeded, so this fold does not fail.
      return
    }
    this.retired = { file, from: this.written, to: this.bytes }
    this.file = fresh
    this.bytes = this.written = 0
  }

  /**
   * Folds the journals of other processes beside the same base: those of processes that are gone,
   * which are then deleted, and with `live` 'fold' those of running ones too, left as they are (the CLI).
   */
  foldOthers(store: RequestLogStore, live: 'fold' | 'skip'): Promise<void> {
    return foldOthers(store, this.base, this.id, live)
  }

  /**
   * Stops the writer and deletes the file when every line of it is written (call after a fold). A
   * file with lines still to write (appended during that fold, or a retired file's last ones) stays,
   * locked until this process exits; the next start folds it.
   */
  remove(): void {
    this.writer.close()
    if (this.file && this.bytes === this.written) this.file.remove()
  }
}

/** Folds every request journal beside `base` but `own` into the store (see RequestJournal.foldOthers). */
export const foldOthers = (store: RequestLogStore, base: string | null, own: string | null, live: 'fold' | 'skip'): Promise<void> =>
  foldOtherJournals(
    listJournalFiles(base, KIND),
    own,
    live,
    (file) => store.put(readBatches(file.path, rowsOf).flatMap((batch) => batch.payload)),
    async () => {},
  )
