import { AppendLog, type Batch, batchLine, foldOtherJournals, listJournalFiles, readBatches } from '../journal/append-log'
import { TurnBatch } from '../journal/turn-batch'
import { repeat } from '../usage/repeat'
import { PendingRecords } from './pending'
import {
  type ClaimOutcome,
  type ConversationFold,
  type ConversationPipeline,
  type ConversationRecord,
  type ConversationStore,
  type EncodedRecord,
  encodedRecord,
  type FoldableConversationStore,
  type RecordHead,
  type RecordRef,
  type StoredRecord,
} from './store'

/** The journals' kind: `<database>.conversations-<id>.log`. */
const KIND = 'conversations'

/**
 * Once this many records wait, a fold starts in the next turn, besides the one every second. A fold
 * is one SQLite transaction on the event loop (about 10 µs a record): a second's records under load
 * (thousands) held every request for tens of milliseconds; this many, about a millisecond.
 */
export const FOLD_AT_RECORDS = 128

/**
 * Or once their requests and answers reach this many bytes: SQLite writes about 4 µs a KiB, so 128
 * records of 50 KiB (tool outputs holding files) held the loop for 28 ms; this many, about 4 ms.
 */
export const FOLD_AT_BYTES = 1024 * 1024

/** A record as a journal line holds it: its head as JSON, then its request and answer as the JSON they were encoded to. */
const rowOf = ({ keyId, id, kind, upstream, parentId, createdAt, expiresAt, request, answer }: EncodedRecord): string =>
  `${JSON.stringify([keyId, id, kind, upstream, parentId, createdAt, expiresAt]).slice(0, -1)},${request},${answer}]`

type Row = [string, string, EncodedRecord['kind'], string | null, string | null, number, number, unknown, unknown]

/** A batch's records as read back from a journal; throws on what is not one (the line is then taken as torn). */
function recordsOf(payload: unknown): EncodedRecord[] {
  return (payload as Row[]).map(([keyId, id, kind, upstream, parentId, createdAt, expiresAt, requestValue, answerValue]) => {
    if (typeof keyId !== 'string' || typeof id !== 'string' || typeof createdAt !== 'number' || typeof expiresAt !== 'number') throw new Error('not a record')
    const request = JSON.stringify(requestValue)
    const answer = JSON.stringify(answerValue)
    return { keyId, id, kind, upstream, parentId, createdAt, expiresAt, request, answer, size: Buffer.byteLength(request) + Buffer.byteLength(answer) }
  })
}

/** What a journal holds past `foldedSeq`, in order; null when nothing. */
function planFrom(batches: Batch<EncodedRecord[]>[], foldedSeq: number): ConversationFold | null {
  const past = batches.filter((batch) => batch.seq > foldedSeq)
  if (past.length === 0) return null
  return { records: past.flatMap((batch) => batch.payload), seq: Math.max(...past.map((batch) => batch.seq)) }
}

/**
 * Stored conversations on a SQLite file, made durable as cheaply as usage: the records put in one
 * event-loop turn are appended to this process's journal (journal/append-log.ts) in one `write()`,
 * and `put` resolves once it returned, so a record a caller was told about survives a kill of the
 * process (only an OS crash can lose the last writes, as with usage). Until they are folded, the
 * records stay in memory (pending.ts), where every read of this process finds them at once; every
 * second (sooner when FOLD_AT_RECORDS or FOLD_AT_BYTES wait), at shutdown, and before a read that
 * the database alone cannot answer, they are written to the database in one transaction, with the
 * journal's fold point, and the journal is emptied.
 * The journals of processes that are gone are folded and deleted at start and every second.
 *
 * The trade-off: another process sharing the file sees a record up to a second later (Postgres is
 * written at once, for the instances of a cluster).
 */
export class JournaledConversationStore implements ConversationStore, ConversationPipeline {
  private readonly pending = new PendingRecords()
  /** The records put in this event-loop turn, appended together at its end. */
  private readonly batch = new TurnBatch<EncodedRecord>(() => this.append())
  /** The last batch appended to the journal. */
  private seq = 0
  private folding: Promise<void> | null = null
  private stopTimer: (() => void) | null = null
  /** Set while folding in the background (start): what a fold started by FOLD_AT_RECORDS or FOLD_AT_BYTES reports a failure to. */
  private onFoldError: ((error: unknown) => void) | null = null
  private foldSoon: ReturnType<typeof setImmediate> | null = null
  /**
   * The last fold failed (a locked or full database): the count and byte bounds start none until
   * one works (the timer's, a read's), so a failure is not retried every turn.
   */
  private failing = false

  private constructor(
    private readonly store: FoldableConversationStore,
    private readonly journal: AppendLog,
    private readonly dbPath: string,
  ) {}

  /** The store for this process, with a journal of its own; what processes that are gone journaled is folded first. */
  static async open(store: FoldableConversationStore, dbPath: string): Promise<JournaledConversationStore> {
    const journaled = new JournaledConversationStore(store, AppendLog.create(dbPath, KIND), dbPath)
    try {
      await journaled.foldOthers()
    } catch (error) {
      journaled.journal.remove()
      throw error
    }
    return journaled
  }

  /** Resolves once the record is in the journal; rejects when the write failed (nothing of it is kept). */
  put(record: ConversationRecord): Promise<boolean> {
    const encoded = encodedRecord(record)
    if (encoded === null) return Promise.resolve(false)
    return this.batch.add(encoded).then(() => true)
  }

  /** Appends the turn's records in one write; once it returned they are durable, and visible to every read. */
  private append(): void {
    const { items, settle } = this.batch.take()
    if (items.length === 0) return settle?.resolve()
    const seq = this.seq + 1
    try {
      this.journal.append(batchLine(seq, `[${items.map(rowOf).join(',')}]`))
    } catch (error) {
      return settle?.reject(error)
    }
    this.seq = seq
    for (const record of items) this.pending.add(record, seq)
    settle?.resolve()
    const due = this.pending.size >= FOLD_AT_RECORDS || this.pending.bytes >= FOLD_AT_BYTES
    if (due && this.onFoldError !== null && !this.failing) this.foldShortly(this.onFoldError)
  }

  /** A fold in the next turn (one at a time): the answers waiting on this turn's write go out first. */
  private foldShortly(onFoldError: (error: unknown) => void): void {
    this.foldSoon ??= setImmediate(() => {
      this.foldSoon = null
      this.fold().catch(onFoldError)
    })
  }

  async get(ref: RecordRef, now: number): Promise<StoredRecord | null> {
    const found = this.pending.get(ref, now)
    if (found !== undefined) return found
    await this.settle()
    return this.store.get(ref, now)
  }

  async head(ref: RecordRef, now: number): Promise<RecordHead | null> {
    const found = this.pending.head(ref, now)
    if (found !== undefined) return found
    await this.settle()
    return this.store.head(ref, now)
  }

  async chain(ref: RecordRef, now: number): Promise<StoredRecord[] | null> {
    const found = this.pending.chain(ref, now)
    if (found !== undefined) return found
    await this.settle()
    return this.store.chain(ref, now)
  }

  async claim(ref: RecordRef, now: number, until: number): Promise<ClaimOutcome> {
    await this.settle(ref)
    return this.store.claim(ref, now, until)
  }

  async release(ref: RecordRef, until: number): Promise<void> {
    await this.settle(ref)
    return this.store.release(ref, until)
  }

  async delete(ref: RecordRef): Promise<boolean> {
    await this.settle(ref)
    return this.store.delete(ref)
  }

  /** Folds first: what it removes (and counts) is what the database would hold had every put been written at once. */
  async pruneExpired(now: number): Promise<number> {
    await this.fold()
    return this.store.pruneExpired(now)
  }

  /**
   * Folds first when the database alone would answer wrong: `ref` is only here, or a put here
   * changed records there (a parent continued, ancestors kept alive longer).
   */
  private async settle(ref?: RecordRef): Promise<void> {
    if (this.pending.changesDatabase || (ref !== undefined && this.pending.has(ref))) await this.fold()
  }

  /**
   * Writes every record put so far into the database, in one transaction with the journal's fold
   * point, and empties the journal. One fold at a time: a call made while one runs waits for it,
   * then folds what is left. A fold that fails writes nothing: the records stay here and in the
   * journal for the next one.
   */
  async fold(): Promise<void> {
    // A fold that fails fails its own caller; one waiting on it then folds what is left itself.
    while (this.folding) await this.folding.catch(() => {})
    this.folding = this.foldOnce()
      .then(
        () => void (this.failing = false),
        (error: unknown) => {
          this.failing = true
          throw error
        },
      )
      .finally(() => (this.folding = null))
    return this.folding
  }

  private async foldOnce(): Promise<void> {
    if (this.batch.size > 0) this.append()
    if (this.pending.size === 0) return
    const upTo = this.seq
    await this.store.fold(this.journal.id, (foldedSeq) => (foldedSeq >= upTo ? null : { records: this.pending.between(foldedSeq, upTo), seq: upTo }))
    this.pending.folded(upTo)
    // Batches appended while the store wrote are past upTo: the file is emptied only when there are none.
    if (this.seq === upTo) this.journal.truncate()
  }

  /** Folds and deletes the journals of processes that are gone (a journal's lock says whether its owner lives). */
  private foldOthers(): Promise<void> {
    return foldOtherJournals(
      listJournalFiles(this.dbPath, KIND),
      this.journal.id,
      'skip',
      (file) => this.store.fold(file.id, (foldedSeq) => planFrom(readBatches(file.path, recordsOf), foldedSeq)),
      (id) => this.store.forgetJournal(id),
    )
  }

  /** Folds every second until stopped, with the journals of processes that are gone. */
  start(onFoldError: (error: unknown) => void, intervalMs = 1000): void {
    this.onFoldError = onFoldError
    this.stopTimer ??= repeat(() => this.fold().then(() => this.foldOthers()), intervalMs, onFoldError)
  }

  /** Folds what is left, then removes the journal: the file first, then its fold point. */
  async stop(): Promise<void> {
    this.stopTimer?.()
    this.stopTimer = null
    this.onFoldError = null
    if (this.foldSoon !== null) clearImmediate(this.foldSoon)
    this.foldSoon = null
    await this.fold()
    this.journal.remove()
    await this.store.forgetJournal(this.journal.id)
  }
}
