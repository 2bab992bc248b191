import { UsageTotals } from '../../usage/accumulator'
import { decodeEntry, type EncodedEntry } from '../../usage/journal'
import type { UsagePipeline } from '../../usage/recorder'
import { repeat } from '../../usage/repeat'
import type { UsageStore } from '../../usage/store'
import type { Logger } from '../../log'
import type { UsageEntry } from '../../usage/entry'
import { limiterUnavailable, type RedisConnection } from './connection'

/** Entries read and folded per transaction. */
const BATCH = 5000

type StreamEntry = [id: string, fields: string[]]

/** The stream's fold point in the database: its sequence numbers never go back (see settle.lua), so one name serves for good. */
const FOLD_POINT = 'redis'

/**
 * Folds the usage stream that every instance's settles append to (cg:usage, one entry per request
 * with a sequence number) into the database. Any instance may fold, and all do, every second: a
 * fold adds only the entries past the stream's fold point and moves the point in the same
 * transaction (the point's row is locked while it does), so an entry is added once whoever folds,
 * and a fold killed halfway adds nothing. Folded entries are then trimmed from the stream. While
 * the database is out of reach, entries wait in Redis.
 */
export class RedisUsageStream implements UsagePipeline {
  /** The fold point this instance last saw: where its next read starts. */
  private point = 0
  private folding: Promise<void> | null = null
  private stopTimer: (() => void) | null = null

  constructor(
    private readonly redis: RedisConnection,
    private readonly store: UsageStore,
    private readonly log: Logger,
  ) {}

  /** Folds everything in the stream now; one fold at a time per instance, a call meanwhile waits for it and folds again. */
  async fold(): Promise<void> {
    while (this.folding) await this.folding
    this.folding = this.foldAll().finally(() => (this.folding = null))
    return this.folding
  }

  private async foldAll(): Promise<void> {
    for (;;) {
      const entries = (await this.redisCall('XRANGE', ['cg:usage', `${this.point + 1}-0`, '+', 'COUNT', String(BATCH)])) as StreamEntry[]
      if (entries.length === 0) return
      let stored = this.point
      let last = stored
      await this.store.fold(FOLD_POINT, (foldedSeq) => {
        stored = foldedSeq
        // Another instance may have folded past this one's point: never write a point below the stored one.
        last = foldedSeq
        const totals = new UsageTotals()
        for (const [id, fields] of entries) {
          const seq = Number(id.slice(0, id.indexOf('-')))
          if (seq <= foldedSeq) continue
          last = seq
          const usage = streamUsage(fields)
          if (usage) totals.add(usage)
          else this.log.error({ entry: id, fields }, 'a usage stream entry that cannot be read was skipped')
        }
        return last === foldedSeq ? null : { totals, seq: last }
      })
      this.point = Math.max(stored, last)
      // Folded entries leave the stream (those before the point, whoever folded them).
      await this.redisCall('XTRIM', ['cg:usage', 'MINID', `${this.point + 1}-0`])
      if (entries.length < BATCH) return
    }
  }

  /** A Redis call for the fold: Redis away is a 503 `limiter_unavailable` to a reader waiting on it, not a 500. */
  private async redisCall(command: string, args: string[]): Promise<unknown> {
    try {
      return await this.redis.send(command, args)
    } catch {
      throw limiterUnavailable()
    }
  }

  start(onFoldError: (error: unknown) => void, intervalMs = 1000): void {
    this.stopTimer ??= repeat(() => this.fold(), intervalMs, onFoldError)
  }

  /** A last fold; what cannot be folded now (the database away) stays in the stream for the others. */
  async stop(): Promise<void> {
    this.stopTimer?.()
    this.stopTimer = null
    await this.fold()
  }
}

/** A stream entry's usage, at the time Redis settled it (the clock the limits used); null when it cannot be read. */
function streamUsage(fields: string[]): UsageEntry | null {
  let encoded = ''
  let at = Number.NaN
  for (let i = 0; i < fields.length; i += 2) {
    if (fields[i] === 'e') encoded = fields[i + 1]!
    else if (fields[i] === 't') at = Number(fields[i + 1])
  }
  try {
    const entry = { ...decodeEntry(JSON.parse(encoded) as EncodedEntry), at }
    return typeof entry.keyId === 'string' && Number.isFinite(at) ? entry : null
  } catch {
    return null
  }
}
