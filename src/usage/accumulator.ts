import { LATENCY_BUCKETS, latencyBucket } from '../../db/latency'
import { utcDate } from '../time'
import type { UsageEntry } from './entry'

/** The counters usage adds up, per minute and per day alike. */
interface Counts {
  keyId: string
  alias: string
  upstream: string
  requests: number
  errors: number
  promptTokens: number
  completionTokens: number
  costNanos: number
  /** What response cache hits saved. */
  cacheSavedNanos: number
  latencyMsSum: number
}

/** A key's use of an alias through an upstream in one minute: the one row usage is added up in. */
export interface MinuteCounts extends Counts {
  /** Unix time of the minute's start, in seconds. */
  minute: number
  /** Requests per latency bucket (db/latency.ts). */
  latencyCounts: number[]
}

/** The same counters for a whole UTC day, as the daily (billing) table keeps them. */
export interface DayCounts extends Counts {
  /** YYYY-MM-DD, UTC. */
  date: string
}

/** Adds the counters of `from` to `into`. */
function addCounts(into: Counts, from: Counts): void {
  into.requests += from.requests
  into.errors += from.errors
  into.promptTokens += from.promptTokens
  into.completionTokens += from.completionTokens
  into.costNanos += from.costNanos
  into.cacheSavedNanos += from.cacheSavedNanos
  into.latencyMsSum += from.latencyMsSum
}

/**
 * Usage entries added up per minute, key, alias and upstream, until they are written. The daily
 * counters are derived from the same rows when they are written, so the minute rollups and the
 * daily totals cannot disagree, and a request costs one map lookup.
 */
export class UsageTotals {
  private rows = new Map<string, MinuteCounts>()

  get empty(): boolean {
    return this.rows.size === 0
  }

  add(entry: UsageEntry): void {
    const minute = Math.floor(entry.at / 60_000) * 60
    const id = `${minute}\u0000${entry.keyId}\u0000${entry.alias}\u0000${entry.upstream}`
    let row = this.rows.get(id)
    if (!row) {
      row = {
        minute,
        keyId: entry.keyId,
        alias: entry.alias,
        upstream: entry.upstream,
        requests: 0,
        errors: 0,
        promptTokens: 0,
        completionTokens: 0,
        costNanos: 0,
        cacheSavedNanos: 0,
        latencyMsSum: 0,
        latencyCounts: new Array<number>(LATENCY_BUCKETS).fill(0),
      }
      this.rows.set(id, row)
    }
    row.requests++
    if (entry.error) row.errors++
    row.promptTokens += entry.promptTokens
    row.completionTokens += entry.completionTokens
    row.costNanos += entry.costNanos
    row.cacheSavedNanos += entry.cacheSavedNanos ?? 0
    row.latencyMsSum += Math.round(entry.latencyMs)
    row.latencyCounts[latencyBucket(entry.latencyMs)]!++
  }

  /** Adds every row of `other` (a fold that failed hands its rows back this way). */
  merge(other: UsageTotals): void {
    for (const [id, theirs] of other.rows) {
      const row = this.rows.get(id)
      if (!row) {
        this.rows.set(id, { ...theirs, latencyCounts: [...theirs.latencyCounts] })
        continue
      }
      addCounts(row, theirs)
      theirs.latencyCounts.forEach((n, i) => (row.latencyCounts[i]! += n))
    }
  }

  minutes(): Iterable<MinuteCounts> {
    return this.rows.values()
  }

  /** The minute rows added up per UTC day. */
  days(): DayCounts[] {
    const days = new Map<string, DayCounts>()
    for (const row of this.rows.values()) {
      const date = utcDate(row.minute * 1000)
      const id = `${date}\u0000${row.keyId}\u0000${row.alias}\u0000${row.upstream}`
      const day = days.get(id)
      if (!day) {
        const { minute: _, latencyCounts: __, ...counts } = row
        days.set(id, { ...counts, date })
        continue
      }
      addCounts(day, row)
    }
    return [...days.values()]
  }
}
