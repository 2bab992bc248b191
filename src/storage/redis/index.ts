import type { QuotaBaseline } from '../../limits/limiter'
import type { Logger } from '../../log'
import type { UsageStore } from '../../usage/store'
import { RedisConnection } from './connection'
import { RedisLimiter } from './limiter'
import { PendingSettles } from './pending'
import { RedisRequestLog } from './request-log'
import { RedisTargetLimiter } from './target-limits'
import { RedisUsageStream } from './usage-stream'

export { limiterUnavailable } from './connection'

/** Concurrency leases lapse this long after their instance stopped renewing them. */
export const LEASE_MS = 15_000
/** An admission is remembered this long for its settle (a settle kept locally through a long outage included). */
export const REMEMBER_MS = 7 * 86_400_000

export interface SharedLimits {
  limiter: RedisLimiter
  /** The provider accounts' rpm / tpm and the rests after their 429s, shared by the instances. */
  targets: RedisTargetLimiter
  usage: RedisUsageStream
  /** The request log's stream, on the same connection. */
  requestLog: RedisRequestLog
  /** Resolves when Redis answers; rejects with its error when it does not. */
  ping(): Promise<void>
  close(): Promise<void>
}

export interface SharedLimitsOptions {
  url: string
  timeoutMs: number
  instanceId: string
  baseline: QuotaBaseline
  usageStore: UsageStore
  /** Where settles that wait for Redis are journaled (see PendingSettles); null: memory only. */
  localBase: string | null
  log: Logger
}

/**
 * Redis for limits, budget reservations and the usage stream of several instances. The gateway
 * starts even while Redis is away (it answers 503 `limiter_unavailable` until Redis returns), so a
 * Redis restart never keeps instances from starting.
 */
export async function openSharedLimits(options: SharedLimitsOptions): Promise<SharedLimits> {
  const { url, timeoutMs, instanceId, baseline, usageStore, localBase, log } = options
  const redis = new RedisConnection(url, timeoutMs)
  try {
    await redis.connect()
    await checkSettings(redis, log)
  } catch (error) {
    log.error({ reason: (error as Error).message }, 'Redis (REDIS_URL) cannot be reached: requests are refused with 503 until it answers')
  }
  const targets = new RedisTargetLimiter(redis, log)
  const pending = PendingSettles.create(localBase)
  const onRest = targets.heard.bind(targets)
  const limiter = new RedisLimiter(redis, { instanceId, leaseMs: LEASE_MS, rememberMs: REMEMBER_MS, baseline, pending, log, onRest })
  return {
    limiter,
    targets,
    usage: new RedisUsageStream(redis, usageStore, log),
    requestLog: new RedisRequestLog(redis, log),
    ping: async () => {
      if ((await redis.send('PING', [])) !== 'PONG') throw new Error('Redis did not answer PONG')
    },
    close: async () => redis.close(),
  }
}

/**
 * Warns when Redis could lose what the limits and the usage stream hold: without persistence a
 * Redis restart loses usage not yet folded and resets the windows; with an eviction policy it may
 * drop counters under memory pressure.
 */
async function checkSettings(redis: RedisConnection, log: Logger): Promise<void> {
  const setting = async (name: string): Promise<string | null> => {
    try {
      const reply = (await redis.send('CONFIG', ['GET', name])) as string[] | Record<string, string>
      return Array.isArray(reply) ? (reply[1] ?? null) : (reply[name] ?? null)
    } catch {
      return null
    }
  }
  const [appendonly, policy] = await Promise.all([setting('appendonly'), setting('maxmemory-policy')])
  if (appendonly === null || policy === null) {
    log.warn('could not read Redis settings (CONFIG GET refused): make sure it runs with appendonly yes and maxmemory-policy noeviction')
    return
  }
  if (appendonly !== 'yes') {
    log.warn(
      { setting: 'appendonly', value: appendonly },
      'Redis runs without appendonly: a Redis restart loses usage not yet folded into the database and resets the limits. Set appendonly yes.',
    )
  }
  if (policy !== 'noeviction') {
    log.warn(
      { setting: 'maxmemory-policy', value: policy },
      `Redis evicts keys under memory pressure (maxmemory-policy ${policy}): limits, budgets and usage could be lost. Set maxmemory-policy noeviction.`,
    )
  }
}

/** The shared usage stream alone, for a process that only reads usage (the CLI): fold it, then close. */
export async function foldSharedUsage(url: string, timeoutMs: number, store: UsageStore, log: Logger): Promise<void> {
  const redis = new RedisConnection(url, timeoutMs)
  try {
    await redis.connect()
    await new RedisUsageStream(redis, store, log).fold()
  } finally {
    redis.close()
  }
}
