/**
 * Failed admin authentications, counted per client address: a token bucket of `burst` failures that
 * refills one failure every `refillMs`. Past it, wrong keys get 429 with Retry-After instead of 401.
 * Only failures are counted and only failures are refused: the admin key itself always works.
 */

export interface ThrottleOptions {
  /** Failures an address may make in a row before it waits. */
  burst: number
  /** One more failure allowed per this many ms. */
  refillMs: number
  /** Addresses tracked at most: past it the least recently failing one is forgotten (bounded memory). */
  maxAddresses: number
  now?: () => number
}

/** 10 wrong keys in a row, then one every 6 s (10 a minute); at most 10,000 addresses (about 1 MB). */
export const ADMIN_THROTTLE: ThrottleOptions = { burst: 10, refillMs: 6_000, maxAddresses: 10_000 }

interface Bucket {
  tokens: number
  at: number
}

export class FailureThrottle {
  /** In order of last failure, oldest first (a Map keeps insertion order): eviction takes the first. */
  private readonly buckets = new Map<string, Bucket>()
  private readonly now: () => number

  constructor(private readonly options: ThrottleOptions) {
    this.now = options.now ?? Date.now
  }

  get size(): number {
    return this.buckets.size
  }

  /**
   * Counts one failure from `address`. Returns 0 when it is within the allowance (answer 401), else
   * the whole seconds until the next failure is allowed (answer 429 with that Retry-After); a
   * refused failure is not counted, so waiting that long is always enough.
   */
  fail(address: string): number {
    const { burst, refillMs, maxAddresses } = this.options
    const now = this.now()
    const bucket = this.buckets.get(address) ?? { tokens: burst, at: now }
    bucket.tokens = Math.min(burst, bucket.tokens + (now - bucket.at) / refillMs)
    bucket.at = now
    // Moved to the end: the most recent failure is the last to be forgotten.
    this.buckets.delete(address)
    this.buckets.set(address, bucket)
    if (this.buckets.size > maxAddresses) this.buckets.delete(this.buckets.keys().next().value!)
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1
      return 0
    }
    return Math.max(1, Math.ceil(((1 - bucket.tokens) * refillMs) / 1000))
  }
}

/**
 * The unit an address is throttled by: an IPv4 address, or an IPv6 /64 (one host commonly holds a
 * whole /64, so single IPv6 addresses would cost a guesser nothing). Unknown: one shared unit.
 */
export function addressKey(address: string | null): string {
  if (!address) return 'unknown'
  const plain = address.replace(/%.*$/, '')
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(plain)
  if (mapped) return mapped[1]!
  if (!plain.includes(':')) return plain
  const [head = '', tail] = plain.split('::')
  const left = head === '' ? [] : head.split(':')
  const right = tail === undefined || tail === '' ? [] : tail.split(':')
  const groups = tail === undefined ? left : [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right]
  return `${groups
    .slice(0, 4)
    .map((group) => (Number.parseInt(group, 16) || 0).toString(16))
    .join(':')}::/64`
}
