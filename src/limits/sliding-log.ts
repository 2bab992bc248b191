import { MINUTE_MS } from '../time'

const WINDOW_MS = MINUTE_MS

/**
 * Amounts counted in the last minute with their times, oldest first, in a growable ring (a sliding
 * log). Events in the same millisecond share one entry, so the log holds at most 60,000 entries
 * however busy the key: exact, and bounded in memory.
 */
export class SlidingLog {
  private times = new Float64Array(8)
  private amounts = new Float64Array(8)
  private head = 0
  /** Entries held (not events: one entry per millisecond). */
  private count = 0
  /** The sum of the amounts in the window: for the request log, the number of requests. */
  total = 0

  advance(now: number): void {
    while (this.count > 0 && this.times[this.head]! <= now - WINDOW_MS) {
      this.total -= this.amounts[this.head]!
      this.head = (this.head + 1) % this.times.length
      this.count--
    }
  }

  /** Appends an event; a clock that stepped back is clamped so the log stays in time order. */
  push(time: number, amount: number): void {
    this.total += amount
    if (this.count > 0) {
      const last = (this.head + this.count - 1) % this.times.length
      if (time <= this.times[last]!) {
        this.amounts[last]! += amount
        return
      }
    }
    if (this.count === this.times.length) this.grow()
    const at = (this.head + this.count) % this.times.length
    this.times[at] = time
    this.amounts[at] = amount
    this.count++
  }

  /** Milliseconds until the oldest entry leaves the window (0 when empty). */
  msUntilOldestLeaves(now: number): number {
    return this.count === 0 ? 0 : this.times[this.head]! + WINDOW_MS - now
  }

  /** Milliseconds until the total drops to `target` or below as old entries leave the window. */
  msUntilTotalAtMost(target: number, now: number): number {
    let total = this.total
    for (let i = 0; i < this.count && total > target; i++) {
      const at = (this.head + i) % this.times.length
      total -= this.amounts[at]!
      if (total <= target) return this.times[at]! + WINDOW_MS - now
    }
    return 0
  }

  private grow(): void {
    const times = new Float64Array(this.times.length * 2)
    const amounts = new Float64Array(this.times.length * 2)
    for (let i = 0; i < this.count; i++) {
      times[i] = this.times[(this.head + i) % this.times.length]!
      amounts[i] = this.amounts[(this.head + i) % this.times.length]!
    }
    this.times = times
    this.amounts = amounts
    this.head = 0
  }
}
