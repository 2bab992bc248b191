import { existsSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { AppendLog, batchLine, claimOrphan, type ClaimedJournal, type JournalFile, listJournalFiles, readBatches } from '../journal/append-log'
import type { UsageEntry } from './entry'

export { claimOrphan, type ClaimedJournal, type JournalFile }

const KIND = 'usage'

/** One group of entries appended together; `seq` increases by one per batch within a journal. */
export interface JournalBatch {
  seq: number
  entries: UsageEntry[]
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
  /** Present only for entries that wait to be settled with a shared limiter (null: none, before a saving). */
  admissionId?: string | null,
  admissionEpoch?: string | null,
  /** Present only for response cache hits. */
  cacheSavedNanos?: number,
]

/**
 * An entry as one JSON array: journals and the Redis usage stream store entries this way. The
 * stream leaves the admission out (`withAdmission` false): only the settle that carries it needs it.
 */
export function encodeEntry(e: UsageEntry, withAdmission = true): EncodedEntry {
  const encoded: EncodedEntry = [e.keyId, e.alias, e.upstream, e.error ? 1 : 0, e.promptTokens, e.completionTokens, e.latencyMs, e.at, e.costNanos]
  const admitted = withAdmission && e.admissionId !== undefined
  if (admitted) encoded.push(e.admissionId, e.admissionEpoch ?? '')
  if (e.cacheSavedNanos) {
    if (!admitted) encoded.push(null, null)
    encoded.push(e.cacheSavedNanos)
  }
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
  cacheSavedNanos,
]: EncodedEntry): UsageEntry {
  const entry: UsageEntry = { keyId, alias, upstream, error: error === 1, promptTokens, completionTokens, costNanos, latencyMs, at }
  if (cacheSavedNanos) entry.cacheSavedNanos = cacheSavedNanos
  if (admissionId !== undefined && admissionId !== null) {
    // The epoch tells a settle sent twice from one whose admission Redis lost: without it a replay counts again.
    entry.admissionId = admissionId
    entry.admissionEpoch = admissionEpoch ?? ''
  }
  return entry
}

/** Every journal file beside a database: each process's own, and the legacy one if it is still there. */
export function listJournals(dbPath: string | null): JournalFile[] {
  const files = listJournalFiles(dbPath, KIND)
  if (dbPath !== null && dbPath !== ':memory:') {
    const legacy = join(dirname(dbPath), `${basename(dbPath)}.usage-log`)
    if (existsSync(legacy)) files.push({ id: LEGACY_JOURNAL, path: legacy })
  }
  return files
}

/**
 * One process's usage write-ahead log: an append-only journal (see journal/append-log.ts) of
 * batches of entries, one `write()` per batch, no fsync.
 */
export class UsageJournal implements JournalFile {
  private constructor(private readonly log: AppendLog) {}

  get id(): string {
    return this.log.id
  }

  get path(): string {
    return this.log.path
  }

  /** A new journal for this process beside the database (its folder is made, owner-only, if need be). */
  static create(dbPath: string): UsageJournal {
    return new UsageJournal(AppendLog.create(dbPath, KIND))
  }

  /**
   * Appends one batch. A write that fails (a full disk) leaves the file as it was: a torn line
   * would hide every batch after it from a later read.
   */
  append(seq: number, entries: UsageEntry[]): void {
    // Not `map(encodeEntry)`: map's index would arrive as `withAdmission` and drop the first entry's admission.
    this.log.append(batchLine(seq, JSON.stringify(entries.map((entry) => encodeEntry(entry)))))
  }

  /** Empties the file once everything in it is folded; appends go on at its (new) end. */
  truncate(): void {
    this.log.truncate()
  }

  /** Deletes the file and then gives up its lock: call once everything in it is folded. */
  remove(): void {
    this.log.remove()
  }
}

/** Every complete batch in a journal file, oldest first; stops at a torn or unreadable line. */
export function readJournal(path: string): JournalBatch[] {
  return readBatches(path, (payload) => (payload as EncodedEntry[]).map(decodeEntry)).map(({ seq, payload }) => ({ seq, entries: payload }))
}
