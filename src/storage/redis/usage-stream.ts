import { UsageTotals } from '../../usage/accumulator'
import { decodeEntry, type EncodedEntry } from '../../usage/journal'
import type { UsagePipeline } from '../../usage/recorder'
import type { UsageStore } from '../../usage/store'
import type { RedisConnection } from './connection'

/** Entries read and folded per transaction. */
const BATCH = 5000

type StreamEntry = [id: string, fields: string[]]

/**
 * Folds the usage stream that every instance's settles append to (cg:usage, one entry per request
 * with a sequence number) into the database. Any instance may fold, and all do, every second: a
 * fold adds only the entries past the stream's fold point and moves the point in the same
 * transaction (the point's row is locked while it does), so an entry is added once whoever folds,
 * and a fold killed halfway adds nothing. Folded entries are then trimmed from the stream. While
 * the database is out of reach, entries wait in Redis.
 *
 * The fold point is named after the stream's epoch (set when Redis was seeded): a Redis that lost
 * its data starts a new stream whose numbers start again, under a new name.
 */
export class RedisUsageStream implements UsagePipeline {
  /** The fold point this instance last saw, per epoch: where its next read starts. */
  private point = { epoch: '', seq: 0 }
  private folding: Promise<void> | null = null
  private timer: Timer | null = null

  constructor(
    private readonly redis: RedisConnection,
    private readonly store: UsageStore,
  ) {}

  /** Folds everything in the stream now; one fold at a time per instance, a call meanwhile waits for it and folds again. */
  async fold(): Promise<void> {
    while (this.folding) await this.folding
    this.folding = this.foldAll().finally(() => (this.folding = null))
    return this.folding
  }

  private async foldAll(): Promise<void> {
    const epoch = (await this.redis.send('GET', ['cg:ready'])) as string | null
    if (epoch === null) return
    if (this.point.epoch !== epoch) this.point = { epoch, seq: 0 }
    for (;;) {
      const entries = (await this.redis.send('XRANGE', ['cg:usage', `${this.point.seq + 1}-0`, '+', 'COUNT', String(BATCH)])) as StreamEntry[]
      if (entries.length === 0) return
      let stored = this.point.seq
      let last = stored
      await this.store.fold(`redis:${epoch}`, (foldedSeq) => {
        stored = foldedSeq
        const totals = new UsageTotals()
        for (const [id, fields] of entries) {
          const seq = Number(id.slice(0, id.indexOf('-')))
          if (seq <= foldedSeq) continue
          totals.add(streamUsage(fields))
          last = seq
        }
        return totals.empty ? null : { totals, seq: last }
      })
      this.point.seq = Math.max(stored, last)
      // Folded entries leave the stream (those before the point, whoever folded them).
      await this.redis.send('XTRIM', ['cg:usage', 'MINID', `${this.point.seq + 1}-0`])
      if (entries.length < BATCH) return
    }
  }

  start(onFoldError: (error: unknown) => void, intervalMs = 1000): void {
    let running = false
    this.timer ??= setInterval(() => {
      if (running) return
      running = true
      this.fold()
        .catch(onFoldError)
        .finally(() => (running = false))
    }, intervalMs)
    this.timer.unref()
  }

  /** A last fold; what cannot be folded now (the database away) stays in the stream for the others. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.fold()
  }
}

/** A stream entry's usage: the entry as settled, at the time Redis settled it (the clock the limits used). */
function streamUsage(fields: string[]) {
  let encoded = ''
  let at = 0
  for (let i = 0; i < fields.length; i += 2) {
    if (fields[i] === 'e') encoded = fields[i + 1]!
    else if (fields[i] === 't') at = Number(fields[i + 1])
  }
  return { ...decodeEntry(JSON.parse(encoded) as EncodedEntry), at }
}
