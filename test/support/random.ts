/**
 * A seeded random in [0, 1), for the tests that draw: the same seed gives the same draws on every
 * run, so a test about a distribution passes or fails for good, never by luck. (mulberry32: small,
 * fast, and even enough for counting draws; not for anything secret.)
 */
export function seededRandom(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
