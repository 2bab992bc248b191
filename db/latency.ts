/** Upper bounds (ms) of the latency histogram kept per minute of usage; the last bucket is everything above. */
export const LATENCY_BOUNDS_MS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000] as const
export const LATENCY_BUCKETS = LATENCY_BOUNDS_MS.length + 1

/** The histogram bucket a latency falls in. */
export function latencyBucket(ms: number): number {
  for (let i = 0; i < LATENCY_BOUNDS_MS.length; i++) if (ms <= LATENCY_BOUNDS_MS[i]!) return i
  return LATENCY_BOUNDS_MS.length
}
