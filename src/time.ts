/** Time helpers shared by limits and usage: UTC days and months, as the quotas and counters use them. */

export const MINUTE_MS = 60_000
export const DAY_MS = 86_400_000

/** "YYYY-MM-DD" of a time, in UTC. */
export const utcDate = (ms: number): string => new Date(ms).toISOString().slice(0, 10)

/** utcDate for times that mostly fall on the same day: the string is worked out once per day, not per call. */
export class UtcDays {
  private day = ''
  private start = 0
  private end = 0

  of(ms: number): string {
    if (ms < this.start || ms >= this.end) {
      this.day = utcDate(ms)
      this.start = Date.parse(`${this.day}T00:00:00Z`)
      this.end = this.start + DAY_MS
    }
    return this.day
  }
}

/** Milliseconds from `now` to the next 00:00 UTC. */
export function msUntilNextDay(now: number): number {
  const d = new Date(now)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1) - now
}

/** Milliseconds from `now` to 00:00 UTC on the 1st of next month. */
export function msUntilNextMonth(now: number): number {
  const d = new Date(now)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) - now
}
