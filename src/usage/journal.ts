import { closeSync, existsSync, fstatSync, ftruncateSync, mkdirSync, openSync, readdirSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { tryLockExclusive } from './file-lock'
import type { UsageEntry } from './entry'

/** One group of entries appended together; `seq` increases by one per batch within a journal. */
export interface JournalBatch {
  seq: number
  entries: UsageEntry[]
}

/** A journal file and its id, the key of its fold point in `usage_journals`. */
export interface JournalFile {
  id: string
  path: string
}

/** The id under which the single journal of earlier versions (`<database>.usage-log`) is folded. */
export const LEGACY_JOURNAL = 'legacy'

export type EncodedEntry = [
  keyId: string,
  alias: string,
  upstream: string,
  error: 0 | 1,
  prompt: number,
  completion: number,
  latencyMs: number,
  at: number,
  /** Absent in journals written before spend was counted. */
  costNanos?: number,
  /** Present only for entries that wait to be settled with a shared limiter. */
  admissionId?: string,
  admissionEpoch?: string,
]

/** An entry as one JSON array: journals and the Redis usage stream store entries this way. */
export function encodeEntry(e: UsageEntry): EncodedEntry {
  const encoded: EncodedEntry = [e.keyId, e.alias, e.upstream, e.error ? 1 : 0, e.promptTokens, e.completionTokens, e.latencyMs, e.at, e.costNanos]
  if (e.admissionId !== undefined) encoded.push(e.admissionId, e.admissionEpoch ?? '')
  return encoded
}

export function decodeEntry([
  keyId,
  alias,
  upstream,
  error,
  promptTokens,
  completionTokens,
  latencyMs,
  at,
  costNanos = 0,
  admissionId,
  admissionEpoch,
]: EncodedEntry): UsageEntry {
  const entry: UsageEntry = { keyId, alias, upstream, error: error === 1, promptTokens, completionTokens, costNanos, latencyMs, at }
  if (admissionId !== undefined) {
    // The epoch tells a settle sent twice from one whose admission Redis lost: without it a replay counts again.
    entry.admissionId = admissionId
    entry.admissionEpoch = admissionEpoch ?? ''
  }
  return entry
}

const journalPath = (dbPath: string, id: string) => `${dbPath}.usage-${id}.log`

/** Every journal file beside a database: each process's own, and the legacy one if it is still there. */
export function listJournals(dbPath: string | null): JournalFile[] {
  if (dbPath === null || dbPath === ':memory:') return []
  const dir = dirname(dbPath)
  const head = `${basename(dbPath)}.usage-`
  const files: JournalFile[] = []
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch {
    return []
  }
  for (const name of names) {
    if (!name.startsWith(head)) continue
    if (name === `${head}log`) files.push({ id: LEGACY_JOURNAL, path: join(dir, name) })
    else if (name.endsWith('.log')) files.push({ id: name.slice(head.length, -4), path: join(dir, name) })
  }
  return files
}

/**
 * One process's usage write-ahead log: an append-only file of JSON lines, one `write()` per batch,
 * no fsync. A write that returned is in the kernel's page cache and survives a kill of the process,
 * exactly like a SQLite WAL commit with `synchronous = NORMAL`; only an OS crash can lose the tail,
 * and a torn last line is ignored on reading. Every process has its own file, named by a fresh id
 * and locked (flock) for the process's lifetime, so several processes on one database never write
 * to the same file, and a file whose lock can be taken belongs to a process that is gone.
 */
export class UsageJournal implements JournalFile {
  private readonly fd: number
  /** The file's length after the last complete append: where a failed append is cut back to. */
  private size: number

  private constructor(
    readonly id: string,
    readonly path: string,
  ) {
    this.fd = openSync(path, 'a', 0o600)
    if (!tryLockExclusive(this.fd)) throw new Error(`usage journal ${path} is locked by another process`)
    this.size = fstatSync(this.fd).size
  }

  /** A new journal for this process beside the database (its folder is made, owner-only, if need be). */
  static create(dbPath: string): UsageJournal {
    mkdirSync(dirname(dbPath), { recursive: true, mode: 0o700 })
    const id = `${process.pid}-${crypto.randomUUID().slice(0, 8)}`
    return new UsageJournal(id, journalPath(dbPath, id))
  }

  /**
   * Appends one batch. A write that fails (a full disk) leaves the file as it was: a torn line
   * would hide every batch after it from a later read.
   */
  append(seq: number, entries: UsageEntry[]): void {
    const line = Buffer.from(`${JSON.stringify([seq, entries.map(encodeEntry)])}\n`)
    try {
      const written = writeSync(this.fd, line)
      if (written !== line.length) throw new Error(`usage journal: wrote ${written} of ${line.length} bytes`)
    } catch (error) {
      ftruncateSync(this.fd, this.size)
      throw error
    }
    this.size += line.length
  }

  /** Empties the file once everything in it is folded; appends go on at its (new) end. */
  truncate(): void {
    ftruncateSync(this.fd, 0)
    this.size = 0
  }

  /** Deletes the file and then gives up its lock: call once everything in it is folded. */
  remove(): void {
    removeFile(this.path)
    closeSync(this.fd)
  }
}

function removeFile(path: string): void {
  try {
    unlinkSync(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
}

/** A journal whose owner is gone, locked by this process until it is removed or released. */
export interface ClaimedJournal extends JournalFile {
  /** Deletes the file, then releases the lock. */
  remove(): void
  /** Releases the lock (again: a no-op). */
  release(): void
}

/** Locks another process's journal when that process is gone; null while its owner still holds it. */
export function claimOrphan(file: JournalFile): ClaimedJournal | null {
  let fd: number
  try {
    fd = openSync(file.path, 'r')
  } catch {
    return null
  }
  if (!tryLockExclusive(fd)) {
    closeSync(fd)
    return null
  }
  let open = true
  const release = () => {
    if (open) closeSync(fd)
    open = false
  }
  return {
    ...file,
    remove() {
      removeFile(file.path)
      release()
    },
    release,
  }
}

/** Every complete batch in a journal file, oldest first; stops at a torn or unreadable line. */
export function readJournal(path: string): JournalBatch[] {
  if (!existsSync(path)) return []
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch {
    return []
  }
  const batches: JournalBatch[] = []
  for (const line of text.split('\n')) {
    if (line === '') continue
    try {
      const [seq, entries] = JSON.parse(line) as [number, EncodedEntry[]]
      batches.push({ seq, entries: entries.map(decodeEntry) })
    } catch {
      break
    }
  }
  return batches
}
