/**
 * Append-only journals beside a database file: what makes a write durable for the price of one
 * `write()`, for usage (src/usage/journal.ts) and for stored conversations
 * (src/conversations/journaled.ts) alike. A journal is a file of JSON lines, one line per batch,
 * `[seq, payload]`, `seq` growing by one per batch. A write that returned is in the kernel's page
 * cache and survives a kill of the process, exactly like a SQLite WAL commit with
 * `synchronous = NORMAL`; only an OS crash can lose the tail, and a torn last line is ignored on
 * reading. Every process has its own file per kind, named by a fresh id and locked (flock) for the
 * process's lifetime, so several processes on one database never write to the same file, and a
 * file whose lock can be taken belongs to a process that is gone. Imports nothing of ours but the lock.
 */
import { closeSync, existsSync, fstatSync, ftruncateSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { tryLockExclusive } from './file-lock'

/** A journal file and its id (the key of its fold point). */
export interface JournalFile {
  id: string
  path: string
}

/** One batch as read back: its sequence number and its payload, decoded. */
export interface Batch<T> {
  seq: number
  payload: T
}

/** Where the journal `id` of this kind (`usage`, `conversations`) sits beside the database file. */
export const journalPath = (dbPath: string, kind: string, id: string): string => `${dbPath}.${kind}-${id}.log`

/** One batch as a line: `payload` is JSON text already (so a record's JSON can be embedded as made). */
export const batchLine = (seq: number, payload: string): string => `[${seq},${payload}]\n`

/** Every journal of this kind beside a database (`<database>.<kind>-<id>.log`), whoever owns it. */
export function listJournalFiles(dbPath: string | null, kind: string): JournalFile[] {
  if (dbPath === null || dbPath === ':memory:') return []
  const dir = dirname(dbPath)
  const head = `${basename(dbPath)}.${kind}-`
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch {
    return []
  }
  return names.filter((name) => name.startsWith(head) && name.endsWith('.log')).map((name) => ({ id: name.slice(head.length, -4), path: join(dir, name) }))
}

/** This process's own journal of one kind: appended to, emptied once folded, removed at a clean stop. */
export class AppendLog implements JournalFile {
  private readonly fd: number
  /** The file's length after the last complete append: where a failed append is cut back to. */
  private size: number

  private constructor(
    readonly kind: string,
    readonly id: string,
    readonly path: string,
    lock: (fd: number) => boolean,
  ) {
    // Made and locked under a name no other process lists, then renamed into place (the lock goes
    // with the open file): opened under its own name, the file could be seen, before this process
    // locked it, by another one starting on the same database, which would take it for an orphan.
    const unlisted = `${path}.new`
    this.fd = openSync(unlisted, 'a', 0o600)
    if (!lock(this.fd)) {
      closeSync(this.fd)
      throw new Error(`${kind} journal ${unlisted} is locked by another process`)
    }
    renameSync(unlisted, path)
    this.size = fstatSync(this.fd).size
  }

  /** A new journal for this process beside the database (its folder is made, owner-only, if need be). */
  static create(dbPath: string, kind: string, lock: (fd: number) => boolean = tryLockExclusive): AppendLog {
    mkdirSync(dirname(dbPath), { recursive: true, mode: 0o700 })
    const id = `${process.pid}-${crypto.randomUUID().slice(0, 8)}`
    return new AppendLog(kind, id, journalPath(dbPath, kind, id), lock)
  }

  /**
   * Appends one line (a `batchLine`) in one `write()`. A write that fails (a full disk) leaves the
   * file as it was: a torn line would hide every batch after it from a later read. Returns the
   * bytes written.
   */
  append(line: string): number {
    // The text is written as it is: a Buffer made of it first cost an allocation and a copy per batch.
    const length = Buffer.byteLength(line)
    try {
      const written = writeSync(this.fd, line)
      if (written !== length) throw new Error(`${this.kind} journal: wrote ${written} of ${length} bytes`)
    } catch (error) {
      ftruncateSync(this.fd, this.size)
      throw error
    }
    this.size += length
    return length
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

/** Every complete batch in a journal file, oldest first; stops at a torn line, or one `decode` throws on. */
export function readBatches<T>(path: string, decode: (payload: unknown) => T): Batch<T>[] {
  if (!existsSync(path)) return []
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch {
    return []
  }
  const batches: Batch<T>[] = []
  for (const line of text.split('\n')) {
    if (line === '') continue
    try {
      const [seq, payload] = JSON.parse(line) as [number, unknown]
      batches.push({ seq, payload: decode(payload) })
    } catch {
      break
    }
  }
  return batches
}

/**
 * Folds the journals of other processes, `own` left out. A journal whose owner is gone (its lock can
 * be taken) is folded, then deleted: first the file, then its fold point (`forget`), so a crash in
 * between leaves a harmless row, never a file that would be folded again from zero. A live
 * process's journal is folded without being emptied when `live` is 'fold', else skipped.
 */
export async function foldOtherJournals(
  files: JournalFile[],
  own: string | null,
  live: 'fold' | 'skip',
  fold: (file: JournalFile) => Promise<void>,
  forget: (id: string) => Promise<void>,
): Promise<void> {
  for (const file of files) {
    if (file.id === own) continue
    const orphan = claimOrphan(file)
    if (orphan === null && live === 'skip') continue
    try {
      await fold(file)
      if (orphan) {
        orphan.remove()
        await forget(file.id)
      }
    } finally {
      orphan?.release()
    }
  }
}
