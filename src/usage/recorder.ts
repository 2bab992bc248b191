import { UsageTotals } from './accumulator'
import type { UsageEntry } from './entry'
import { foldOtherJournals } from '../journal/append-log'
import { type Settle, TurnBatch } from '../journal/turn-batch'
import { type JournalBatch, listJournals, readJournal, type UsageJournal } from './journal'
import { repeat } from './repeat'
import type { FoldPlan, UsageStore } from './store'

/** The write side of usage, as a limiter settling a request sees it. */
export interface UsageSink {
  /** Adds one request to the counters; resolves once it is durable. */
  record(entry: UsageEntry): Promise<void>
}

/**
 * Moves recorded usage into the store: in the background, on demand (before usage is read, so
 * reads are exact), and a last time at shutdown. One process's journal (UsageRecorder), or the
 * usage stream that several instances share (storage/redis).
 */
export interface UsagePipeline {
  start(onFoldError: (error: unknown) => void): void
  fold(): Promise<void>
  stop(): Promise<void>
}

/** What a journal holds past `foldedSeq` (and up to `upTo`), added up; null when nothing. */
function planFrom(batches: JournalBatch[], foldedSeq: number, upTo = Number.POSITIVE_INFINITY): FoldPlan | null {
  const totals = new UsageTotals()
  let seq = foldedSeq
  for (const batch of batches) {
    if (batch.seq <= foldedSeq || batch.seq > upTo) continue
    for (const entry of batch.entries) totals.add(entry)
    seq = Math.max(seq, batch.seq)
  }
  return seq === foldedSeq ? null : { totals, seq }
}

/**
 * Folds the journals of other processes into the store (see journal/append-log.ts, foldOtherJournals).
 * A fold adds only batches past the journal's fold point and moves the point in the same
 * transaction, so it is never applied twice, whoever runs it.
 */
export class JournalFolder {
  constructor(
    private readonly store: UsageStore,
    /** The database file the journals sit beside; null: there are none. */
    private readonly dbPath: string | null,
  ) {}

  /**
   * Folds every journal but `own`. Orphans are folded and removed; journals of live processes are
   * folded without being emptied when `live` is 'fold' (the CLI, for exact reports), else skipped.
   */
  foldOthers(own: string | null, live: 'fold' | 'skip'): Promise<void> {
    return foldOtherJournals(
      listJournals(this.dbPath),
      own,
      live,
      (file) => this.store.fold(file.id, (foldedSeq) => planFrom(readJournal(file.path), foldedSeq)),
      (id) => this.store.forgetJournal(id),
    )
  }
}

/**
 * Folds whatever any process journaled but has not folded yet into the store, without emptying the
 * journals of processes still running (they own them), and removes those of processes that are
 * gone. For the CLI: its reports are exact whether servers run or were killed.
 */
export const foldJournals = (store: UsageStore, dbPath: string | null): Promise<void> => new JournalFolder(store, dbPath).foldOthers(null, 'fold')

/** Folds and removes the journals of processes that are gone (a process that now keeps no journal of its own). */
export const foldOrphanJournals = (store: UsageStore, dbPath: string | null): Promise<void> => new JournalFolder(store, dbPath).foldOthers(null, 'skip')

/**
 * Usage counters, durable before the response ends and cheap per request. Entries recorded in the
 * same event-loop turn are appended to this process's journal (see journal.ts) in one `write()`;
 * `record` resolves once that write returned, and callers await it before the response is
 * finished, so a response the client received is counted even if the process dies right after.
 * Every second the counters added up meanwhile are folded into the store in one transaction and
 * the journal is emptied. A SQLite commit per turn cost about 25 µs (a WAL frame per page touched);
 * the journal write costs about 2 µs.
 *
 * Several processes may share one database file: each has its own journal, and each fold also
 * folds and removes the journals of processes that are gone.
 *
 * Without a journal (an in-memory database) each turn's entries are folded into the store directly.
 */
export class UsageRecorder implements UsageSink, UsagePipeline {
  /** The entries recorded in this event-loop turn, appended (or folded) together at its end. */
  private readonly batch = new TurnBatch<UsageEntry>(() => (this.journal ? this.append() : void this.fold().catch(() => {})))
  /** Everything recorded and not yet folded. */
  private totals = new UsageTotals()
  /** The last batch appended to the journal. */
  private seq = 0
  /** The fold point this process last wrote; another value in the store means the CLI folded. */
  private foldedSeq = 0
  private folding: Promise<void> | null = null
  private stopTimer: (() => void) | null = null
  private readonly others: JournalFolder

  private constructor(
    private readonly store: UsageStore,
    private readonly journal: UsageJournal | null,
    dbPath: string | null,
  ) {
    this.others = new JournalFolder(store, dbPath)
  }

  /** A recorder for this process; what killed processes journaled but never folded is counted first, before any quota is read. */
  static async open(store: UsageStore, journal: UsageJournal | null, dbPath: string | null = null): Promise<UsageRecorder> {
    const recorder = new UsageRecorder(store, journal, dbPath)
    await recorder.others.foldOthers(journal?.id ?? null, 'skip')
    return recorder
  }

  record(entry: UsageEntry): Promise<void> {
    // Counted once durable (appended, or folded without a journal): an entry whose write failed
    // belongs to a request that is refused, and is never billed.
    return this.batch.add(entry)
  }

  /** Appends the turn's batch to the journal: once the write returned, the batch is durable. */
  private append(): void {
    const { items: batch, settle } = this.batch.take()
    if (batch.length === 0) return settle?.resolve()
    try {
      this.journal!.append(this.seq + 1, batch)
    } catch (error) {
      return settle?.reject(error)
    }
    this.seq++
    for (const entry of batch) this.totals.add(entry)
    settle?.resolve()
  }

  /** Resolves when usage can be made durable now: an empty batch appended to the journal. */
  async probe(): Promise<void> {
    if (!this.journal) return
    this.journal.append(this.seq + 1, [])
    this.seq++
  }

  /**
   * Folds everything recorded so far into the store and empties the journal. Called every second,
   * at shutdown, and before usage is read, so reads are exact. One fold at a time: a call made
   * while one runs waits for it, then folds what is left.
   */
  async fold(): Promise<void> {
    while (this.folding) await this.folding
    this.folding = this.foldOnce().finally(() => (this.folding = null))
    return this.folding
  }

  private async foldOnce(): Promise<void> {
    const journal = this.journal
    // With a journal the batch is appended first; without one, its callers wait for this fold.
    let waiting: Settle | null = null
    if (journal) {
      if (this.batch.size > 0) this.append()
    } else {
      const taken = this.batch.take()
      waiting = taken.settle
      for (const entry of taken.items) this.totals.add(entry)
    }
    if (this.totals.empty) return waiting?.resolve()
    const totals = this.totals
    this.totals = new UsageTotals()
    const upTo = this.seq
    try {
      await this.store.fold(journal?.id ?? null, (stored) =>
        // The CLI folded part of the journal meanwhile: the file, not memory, says what is left.
        journal && stored !== this.foldedSeq ? planFrom(readJournal(journal.path), stored, upTo) : { totals, seq: upTo },
      )
    } catch (error) {
      // Nothing was written. With a journal the counters stay for the next fold, as they stay in the
      // file; without one they are their waiting requests', which are refused: not counted.
      if (journal) {
        totals.merge(this.totals)
        this.totals = totals
      }
      waiting?.reject(error)
      throw error
    }
    this.foldedSeq = upTo
    // Batches appended while the store wrote are past upTo: the file is emptied only when there are none.
    if (journal && this.seq === upTo) journal.truncate()
    waiting?.resolve()
  }

  /**
   * Folds every second until stopped, with the journals of processes that are gone. A fold that
   * fails (the database locked past its busy timeout, the disk full) changes nothing and loses
   * nothing: the entries stay in memory and in the journal for the next one.
   */
  start(onFoldError: (error: unknown) => void, intervalMs = 1000): void {
    this.stopTimer ??= repeat(() => this.fold().then(() => this.others.foldOthers(this.journal?.id ?? null, 'skip')), intervalMs, onFoldError)
  }

  /** Folds what is left, then removes the journal: the file first, then its fold point. */
  async stop(): Promise<void> {
    this.stopTimer?.()
    this.stopTimer = null
    await this.fold()
    if (this.journal) {
      this.journal.remove()
      await this.store.forgetJournal(this.journal.id)
    }
  }
}
