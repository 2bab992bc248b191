import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { Admission, KeyLimits, QuotaBaseline } from '../src/limits/limiter'
import { MemoryLimiter } from '../src/limits/memory'
import { createLogger } from '../src/log'
import { RedisConnection } from '../src/storage/redis/connection'
import { RedisLimiter } from '../src/storage/redis/limiter'
import { PendingSettles } from '../src/storage/redis/pending'
import type { UsageEntry } from '../src/usage/entry'
import { SETUP_MS, TEARDOWN_MS, TEST_MS } from './support/hooks'
import { describeWithServers, type RedisServer, startRedis } from './support/servers'

/**
 * The limiters' period counters (every key's, limit or not, so a limit added later starts from what
 * was used) and `release` (an admission given back without a usage entry, for count_tokens).
 */
setDefaultTimeout(TEST_MS)

const open: KeyLimits = {
  requestsPerMinute: 1000,
  tokensPerMinute: 1_000_000,
  maxConcurrent: 1000,
  dailyRequestQuota: null,
  monthlyTokenQuota: null,
  dailyBudgetNanos: null,
  monthlyBudgetNanos: null,
}

const ended = (at: number, costNanos = 0, tokens = 0, keyId = 'k'): UsageEntry => ({
  keyId,
  alias: 'local/echo',
  upstream: 'local',
  error: false,
  promptTokens: tokens,
  completionTokens: 0,
  costNanos,
  latencyMs: 1,
  at,
})

function admitted(admission: Admission): Extract<Admission, { ok: true }> {
  if (!admission.ok) throw admission.error
  return admission
}

/** A baseline that counts its reads and returns `persisted` for every period. */
function countingBaseline(persisted = { requests: 0, costNanos: 0, tokens: 0 }) {
  const reads: string[] = []
  const baseline: QuotaBaseline = {
    dayUsage: async (keyId, day) => (reads.push(`${keyId} ${day}`), { requests: persisted.requests, costNanos: persisted.costNanos }),
    monthUsage: async (keyId, first) => (reads.push(`${keyId} ${first}`), { tokens: persisted.tokens, costNanos: persisted.costNanos }),
    allKeys: async () => new Map(),
  }
  return { baseline, reads }
}

describe('the in-memory limiter counts every key’s periods', () => {
  const noon = Date.UTC(2026, 10, 22, 12, 0, 0)

  test('a budget and quotas that appear later start from what was used, and the store is read once per key', async () => {
    const { baseline, reads } = countingBaseline({ requests: 1, costNanos: 100, tokens: 10 })
    const limiter = new MemoryLimiter(baseline)
    await admitted(await limiter.admit('k', open, noon)).settle(ended(noon, 400, 30))
    await admitted(await limiter.admit('k', open, noon + 1)).settle(ended(noon + 1, 400, 30))
    expect(reads).toEqual(['k 2026-11-22', 'k 2026-11-01'])
    // 100 persisted + 800 settled: a budget of 900 is spent, one of 901 is not.
    expect((await limiter.admit('k', { ...open, dailyBudgetNanos: 900 }, noon + 2)).ok).toBe(false)
    expect((await limiter.admit('k', { ...open, monthlyBudgetNanos: 900 }, noon + 2)).ok).toBe(false)
    expect((await limiter.admit('k', { ...open, monthlyTokenQuota: 70 }, noon + 2)).ok).toBe(false)
    expect((await limiter.admit('k', { ...open, dailyRequestQuota: 3 }, noon + 2)).ok).toBe(false)
    expect((await limiter.admit('k', { ...open, dailyBudgetNanos: 901 }, noon + 2)).ok).toBe(true)
    expect(reads).toHaveLength(2)
  })

  test('a new day starts from what this process counted in it, without reading the store again', async () => {
    const { baseline, reads } = countingBaseline({ requests: 5, costNanos: 5_000, tokens: 0 })
    const limiter = new MemoryLimiter(baseline)
    const evening = Date.UTC(2026, 10, 22, 23, 59, 0)
    const spanning = admitted(await limiter.admit('k', open, evening))
    // Ends after midnight, before the key's next admission: charged to the new day.
    await spanning.settle(ended(evening + 120_000, 700))
    expect((await limiter.admit('k', { ...open, dailyBudgetNanos: 700 }, evening + 121_000)).ok).toBe(false)
    expect((await limiter.admit('k', { ...open, dailyBudgetNanos: 701 }, evening + 121_000)).ok).toBe(true)
    // The month goes on: the persisted 5,000 and the 700.
    expect((await limiter.admit('k', { ...open, monthlyBudgetNanos: 5_700 }, evening + 121_000)).ok).toBe(false)
    expect(reads).toHaveLength(2)
  })

  test('a key is kept while its last settle may not be folded yet: it is idle from its last settle, not its last admission', async () => {
    const limiter = new MemoryLimiter(countingBaseline().baseline)
    const long = admitted(await limiter.admit('long', open, 0))
    await long.settle(ended(170_000, 900, 0, 'long'))
    await limiter.admit('other', open, 180_000)
    expect(limiter.size).toBe(2)
    expect((await limiter.admit('long', { ...open, dailyBudgetNanos: 900 }, 181_000)).ok).toBe(false)
    await limiter.admit('other', open, 360_000)
    expect(limiter.size).toBe(1)
  })

  test('a failed read fails the admissions waiting for it; the next one reads again', async () => {
    let fail = true
    const limiter = new MemoryLimiter({
      dayUsage: async () => {
        if (fail) throw new Error('database away')
        return { requests: 0, costNanos: 50 }
      },
      monthUsage: async () => ({ tokens: 0, costNanos: 50 }),
      allKeys: async () => new Map(),
    })
    const both = await Promise.allSettled([limiter.admit('k', open, noon), limiter.admit('k', open, noon)])
    expect(both.map((result) => result.status)).toEqual(['rejected', 'rejected'])
    fail = false
    expect((await limiter.admit('k', { ...open, dailyBudgetNanos: 50 }, noon)).ok).toBe(false)
    expect((await limiter.admit('k', { ...open, dailyBudgetNanos: 51 }, noon)).ok).toBe(true)
  })
})

describe('release: an admission given back without a usage entry', () => {
  test('in memory: the slot and the daily quota are given back, the request window keeps it, nothing is recorded, once', async () => {
    const recorded: UsageEntry[] = []
    const limiter = new MemoryLimiter(null, { record: async (entry) => void recorded.push(entry) })
    const tight = { ...open, requestsPerMinute: 3, maxConcurrent: 1, dailyRequestQuota: 3 }
    const count = admitted(await limiter.admit('k', tight, 0, 500))
    expect((await limiter.admit('k', tight, 1)).ok).toBe(false)
    await count.release()
    await count.release()
    await count.settle(ended(2, 10, 10))
    expect(recorded).toEqual([])
    // The quota of 3 still has all three; the window of 3 holds the count: two more fit, not three.
    await admitted(await limiter.admit('k', tight, 3)).settle(ended(3))
    await admitted(await limiter.admit('k', tight, 4)).settle(ended(4))
    const refused = await limiter.admit('k', tight, 5)
    expect(!refused.ok && refused.reason).toBe('requests')
    expect(limiter.peek('k', tight, 5).remaining).toBe(0)
  })
})

describeWithServers('release in Redis', ['redis'], () => {
  let server: RedisServer
  let redis: RedisConnection
  let limiter: RedisLimiter
  beforeAll(async () => {
    server = await startRedis()
    redis = new RedisConnection(server.url, 2000)
    await redis.connect()
    limiter = new RedisLimiter(redis, {
      instanceId: 'release-test',
      leaseMs: 15_000,
      rememberMs: 60_000,
      baseline: {
        dayUsage: async () => ({ requests: 0, costNanos: 0 }),
        monthUsage: async () => ({ tokens: 0, costNanos: 0 }),
        allKeys: async () => new Map(),
      },
      pending: PendingSettles.create(null),
      log: createLogger('error', { write() {} }),
    })
  }, SETUP_MS)
  afterAll(async () => {
    await limiter?.stop()
    redis?.close()
    await server?.dispose()
  }, TEARDOWN_MS)

  test('the lease, the reservation and the day’s quota count are given back; the window keeps it; no usage entry; once', async () => {
    const tight = { ...open, requestsPerMinute: 3, maxConcurrent: 1, dailyRequestQuota: 3, dailyBudgetNanos: 999 }
    const count = admitted(await limiter.admit('r', tight, Date.now(), 999))
    expect(await redis.send('HGET', ['cg:k:r:rs', '_t'])).toBe('999')
    const busy = await limiter.admit('r', tight, Date.now())
    expect(!busy.ok && busy.reason).toBe('budget')
    await count.release()
    await count.release()
    await count.settle(ended(Date.now(), 10, 10, 'r'))
    expect(await redis.send('ZCARD', ['cg:k:r:fl'])).toBe(0)
    expect(await redis.send('HGET', ['cg:k:r:rs', '_t'])).toBe('0')
    expect(await redis.send('XLEN', ['cg:usage'])).toBe(0)
    const days = (await redis.send('KEYS', ['cg:k:r:d:*'])) as string[]
    expect(days).toHaveLength(1)
    expect(await redis.send('HGET', [days[0]!, 'rq'])).toBe('0')
    await admitted(await limiter.admit('r', tight, Date.now())).settle(ended(Date.now(), 0, 0, 'r'))
    await admitted(await limiter.admit('r', tight, Date.now())).settle(ended(Date.now(), 0, 0, 'r'))
    const refused = await limiter.admit('r', tight, Date.now())
    expect(!refused.ok && refused.reason).toBe('requests')
    expect(await redis.send('XLEN', ['cg:usage'])).toBe(2)
  })
})
