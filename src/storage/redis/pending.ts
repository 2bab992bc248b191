import type { UsageEntry } from '../../usage/entry'
import { claimOrphan, listJournals, readJournal, UsageJournal } from '../../usage/journal'

/**
 * Settles that could not reach Redis (it was down, or did not answer in time), kept until they can.
 * Each is written to this process's local journal before the response goes on, so a process killed
 * meanwhile loses none: the next process started beside the same files replays them. Replaying a
 * settle Redis already applied (its answer was lost) is a no-op there, so nothing counts twice.
 */
export class PendingSettles {
  private entries: UsageEntry[] = []
  private seq = 0
  private replaying: Promise<void> | null = null
  private closed = false

  constructor(
    /** This process's journal; null: kept in memory only (no local data directory). */
    private journal: UsageJournal | null,
    /** Where the journals are: the orphans of processes that are gone are replayed from here. */
    private readonly base: string | null,
  ) {}

  static create(base: string | null): PendingSettles {
    return new PendingSettles(base === null ? null : UsageJournal.create(base), base)
  }

  get size(): number {
    return this.entries.length
  }

  /** Keeps a settle for later; durable once this returns (one write to the journal). */
  keep(entry: UsageEntry): void {
    // A request cut at shutdown may settle after close: it gets a journal of its own, left for the next start.
    if (this.closed && this.base !== null) {
      this.journal = UsageJournal.create(this.base)
      this.closed = false
    }
    this.journal?.append(++this.seq, [entry])
    this.entries.push(entry)
  }

  /**
   * Sends every kept settle (this process's, then the journals of processes that are gone) through
   * `settle`; stops at the first that fails and keeps it and the rest for the next call.
   */
  replay(settle: (entry: UsageEntry) => Promise<void>): Promise<void> {
    this.replaying ??= this.replayOnce(settle).finally(() => (this.replaying = null))
    return this.replaying
  }

  private async replayOnce(settle: (entry: UsageEntry) => Promise<void>): Promise<void> {
    while (this.entries.length > 0) {
      await settle(this.entries[0]!)
      this.entries.shift()
    }
    // Every entry in the file has been sent: the file can start afresh.
    this.journal?.truncate()
    for (const file of listJournals(this.base)) {
      if (file.id === this.journal?.id) continue
      const orphan = claimOrphan(file)
      if (orphan === null) continue
      try {
        for (const batch of readJournal(file.path)) for (const entry of batch.entries) await settle(entry)
        orphan.remove()
      } finally {
        orphan.release()
      }
    }
  }

  /** Removes this process's journal; only once nothing is kept (else it stays for the next start). */
  close(): void {
    if (this.journal && this.entries.length === 0) {
      this.journal.remove()
      this.closed = true
    }
  }
}
