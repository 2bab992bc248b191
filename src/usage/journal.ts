import { closeSync, existsSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs'
import type { UsageEntry } from './recorder'

/** The journal beside a database file; an in-memory database has none. */
export const journalPathFor = (dbPath: string): string | null => (dbPath === ':memory:' ? null : `${dbPath}.usage-log`)

/** One group of entries appended together; `seq` increases by one per batch, across restarts. */
export interface JournalBatch {
  seq: number
  entries: UsageEntry[]
}

type EncodedEntry = [keyId: string, alias: string, upstream: string, error: 0 | 1, prompt: number, completion: number, latencyMs: number, at: number]

const encode = (e: UsageEntry): EncodedEntry => [e.keyId, e.alias, e.upstream, e.error ? 1 : 0, e.promptTokens, e.completionTokens, e.latencyMs, e.at]
const decode = ([keyId, alias, upstream, error, promptTokens, completionTokens, latencyMs, at]: EncodedEntry): UsageEntry => ({
  keyId,
  alias,
  upstream,
  error: error === 1,
  promptTokens,
  completionTokens,
  latencyMs,
  at,
})

/**
 * The usage write-ahead log: an append-only file of JSON lines, one `write()` per batch, no fsync.
 * A write that returned is in the kernel's page cache and survives a kill of the process, exactly
 * like a SQLite WAL commit with `synchronous = NORMAL`; only an OS crash can lose the tail, and a
 * torn last line is ignored on reading. The file is folded into SQLite every second and then
 * emptied, so it stays small.
 */
export class UsageJournal {
  private readonly fd: number

  constructor(readonly path: string) {
    this.fd = openSync(path, 'a')
  }

  append(seq: number, entries: UsageEntry[]): void {
    writeSync(this.fd, `${JSON.stringify([seq, entries.map(encode)])}\n`)
  }

  /** Empties the file once everything in it is folded; appends go on at its (new) end. */
  truncate(): void {
    ftruncateSync(this.fd, 0)
  }

  close(): void {
    closeSync(this.fd)
  }
}

/** Every complete batch in a journal file, oldest first; stops at a torn or unreadable line. */
export function readJournal(path: string | null): JournalBatch[] {
  if (path === null || !existsSync(path)) return []
  const batches: JournalBatch[] = []
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line === '') continue
    try {
      const [seq, entries] = JSON.parse(line) as [number, EncodedEntry[]]
      batches.push({ seq, entries: entries.map(decode) })
    } catch {
      break
    }
  }
  return batches
}
