import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { KeyLimits, PeriodUsage, QuotaBaseline } from '../../src/limits/limiter'
import { createLogger } from '../../src/log'
import { RedisConnection } from '../../src/storage/redis/connection'
import { RedisLimiter } from '../../src/storage/redis/limiter'
import { PendingSettles } from '../../src/storage/redis/pending'
import { SCRIPTS } from '../../src/storage/redis/scripts'
import { msUntilNextMonth, utcDate } from '../../src/time'
import type { UsageEntry } from '../../src/usage/entry'
import { describeWithServers, type RedisServer, startRedis } from '../support/servers'
import { waitFor } from '../support/wait'
import { setup, setupEach, teardown, TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

/**
 * The limiter's Lua scripts against a real Redis. Time is passed in (`now=<ms>`, the scripts' test
 * seam) where a test needs the window to move; the gateway never passes it, and Redis's clock rules.
 */

const limits = (rpm: number, more: Partial<KeyLimits> = {}): KeyLimits => ({
  requestsPerMinute: rpm,
  tokensPerMinute: 1_000_000,
  maxConcurrent: 1000,
  dailyRequestQuota: null,
  monthlyTokenQuota: null,
  dailyBudgetNanos: null,
  monthlyBudgetNanos: null,
  ...more,
})

const arg = (value: number | null) => (value === null ? '-1' : String(value))
let nextId = 0

describeWithServers('the Redis limiter scripts', ['redis'], () => {
  let server: RedisServer
  let redis: RedisConnection
  setup(async () => {
    server = await startRedis()
    redis = new RedisConnection(server.url, 2000)
    await redis.connect()
  })
  teardown(async () => {
    redis?.close()
    await server?.dispose()
  })
  setupEach(async () => {
    await redis.send('FLUSHALL', [])
    await redis.send('SET', ['cg:ready', 'test-epoch'])
  })

  /** Runs admit.lua at `now` (ms); returns its raw answer and the request id it used. */
  async function admit(key: string, l: KeyLimits, now: number, reserve = 0) {
    const id = `t:${++nextId}`
    const args = [l.requestsPerMinute, l.tokensPerMinute, l.maxConcurrent].map(String)
    args.push(
      arg(l.dailyRequestQuota),
      arg(l.monthlyTokenQuota),
      arg(l.dailyBudgetNanos),
      arg(l.monthlyBudgetNanos),
      String(reserve),
      id,
      '15000',
      '60000',
      `now=${now}`,
    )
    return { id, reply: (await redis.run(SCRIPTS.admit, [`cg:k:${key}`], args)) as (number | string)[] }
  }
  const settle = async (key: string, id: string, tokens: number, cost: number, now: number, entry = '["k","a","u",0,1,1,1,1,0]', epoch = 'test-epoch') =>
    (await redis.run(SCRIPTS.settle, [`cg:k:${key}`], [id, String(tokens), String(cost), entry, epoch, `now=${now}`])) as number[]

  test('requests per minute: a sliding window, exact at its edge, with Retry-After to the moment a request frees', async () => {
    const t0 = 1_800_000_000_000
    for (let i = 0; i < 10; i++) expect((await admit('a', limits(10), t0 + i * 1000)).reply[0]).toBe(1)
    const refused = (await admit('a', limits(10), t0 + 30_000)).reply
    // The first request (t0) leaves the window at t0 + 60 s: 30 s from now.
    expect(refused.slice(0, 4)).toEqual([0, 'requests', 30_000, 10])
    expect((await admit('a', limits(10), t0 + 59_999)).reply[0]).toBe(0)
    expect((await admit('a', limits(10), t0 + 60_000)).reply[0]).toBe(1)
    expect((await admit('a', limits(10), t0 + 60_000)).reply[0]).toBe(0)
    // Refusals consumed nothing: at t0 + 61 s exactly one more fits (the t0 + 1 s request left).
    expect((await admit('a', limits(10), t0 + 61_000)).reply[0]).toBe(1)
    expect((await admit('a', limits(10), t0 + 61_000)).reply[0]).toBe(0)
  })

  test('events in one millisecond share an entry; a log stays bounded', async () => {
    const t0 = 1_800_000_000_000
    for (let i = 0; i < 50; i++) expect((await admit('b', limits(100), t0)).reply[0]).toBe(1)
    expect(await redis.send('LLEN', ['cg:k:b:rq'])).toBe(1)
    expect(await redis.send('GET', ['cg:k:b:rqn'])).toBe('50')
  })

  test('tokens are charged at settle; over the token limit the key waits until enough usage left the window', async () => {
    const t0 = 1_800_000_000_000
    const l = limits(1000, { tokensPerMinute: 100 })
    const first = await admit('c', l, t0)
    expect(await settle('c', first.id, 60, 0, t0 + 1000)).toEqual([1, (t0 + 1000) * 1000, t0 + 1000])
    const second = await admit('c', l, t0 + 2000)
    await settle('c', second.id, 50, 0, t0 + 5000)
    const refused = (await admit('c', l, t0 + 10_000)).reply
    // 110 tokens in the window; the first charge (60 at t0 + 1 s) leaves at t0 + 61 s, bringing it to 50.
    expect(refused.slice(0, 3)).toEqual([0, 'tokens', 51_000])
    expect((await admit('c', l, t0 + 61_001)).reply[0]).toBe(1)
  })

  test('a settle counts once: sent again, it is a no-op that appends nothing', async () => {
    const t0 = 1_800_000_000_000
    const { id } = await admit('d', limits(10), t0)
    const [done, seq] = await settle('d', id, 5, 7, t0 + 10)
    expect(done).toBe(1)
    expect(await settle('d', id, 5, 7, t0 + 20)).toEqual([0])
    expect(await redis.send('XLEN', ['cg:usage'])).toBe(1)
    expect(seq).toBe((t0 + 10) * 1000)
  })

  test('a settle whose admission Redis lost (a new epoch) still counts its usage, once', async () => {
    const t0 = 1_800_000_000_000
    const { id } = await admit('lost', limits(10), t0)
    // Redis lost its data and was seeded again: the admission is gone, the epoch is new.
    await redis.send('FLUSHALL', [])
    await redis.send('SET', ['cg:ready', 'epoch-after-loss'])
    const [outcome, seq] = await settle('lost', id, 5, 70, t0 + 10)
    expect(outcome).toBe(2)
    expect(seq).toBe((t0 + 10) * 1000)
    expect(await redis.send('XLEN', ['cg:usage'])).toBe(1)
    expect(await redis.send('HGET', [`cg:k:lost:d:${Math.floor((t0 + 10) / 86_400_000)}`, 'c'])).toBe('70')
    // Sent again, it is one more lost admission: what makes a replay safe is the journal being emptied
    // once a replay succeeded, and the same-epoch rule for answers that were lost.
    const { id: second } = await admit('lost', limits(10), t0 + 20)
    expect((await settle('lost', second, 1, 1, t0 + 30, undefined, 'epoch-after-loss'))[0]).toBe(1)
    expect(await settle('lost', second, 1, 1, t0 + 40, undefined, 'epoch-after-loss')).toEqual([0])
  })

  test('sequence numbers never go back, even when Redis loses its last writes', async () => {
    const t0 = 1_800_000_000_000
    const first = await admit('seq', limits(10), t0)
    const [, one] = await settle('seq', first.id, 1, 0, t0)
    const second = await admit('seq', limits(10), t0)
    const [, two] = await settle('seq', second.id, 1, 0, t0)
    expect(two).toBe(one! + 1)
    // The counter's last writes are lost (an AOF that had not reached the disk): a later time still
    // numbers above everything handed out before.
    await redis.send('DEL', ['cg:seq'])
    const third = await admit('seq', limits(10), t0 + 5)
    const [, three] = await settle('seq', third.id, 1, 0, t0 + 5)
    expect(three).toBeGreaterThan(two!)
  })

  test('concurrency: leases; a lease not renewed lapses with its reservation, a renewed one stays', async () => {
    const t0 = 1_800_000_000_000
    const l = limits(1000, { maxConcurrent: 2, dailyBudgetNanos: 1_000_000 })
    const a = await admit('e', l, t0, 100)
    const b = await admit('e', l, t0, 100)
    expect([a.reply[0], b.reply[0]]).toEqual([1, 1])
    expect((await admit('e', l, t0 + 1000)).reply.slice(0, 3)).toEqual([0, 'concurrency', 1000])
    expect(await redis.send('HGET', ['cg:k:e:rs', '_t'])).toBe('200')
    // b's instance renews its lease; a's instance is gone.
    expect(await redis.run(SCRIPTS.renew, [], ['15000', 'cg:k:e', b.id, '100', `now=${t0 + 10_000}`])).toBe(1)
    const c = await admit('e', l, t0 + 15_001, 100)
    expect(c.reply[0]).toBe(1)
    expect(await redis.send('HGET', ['cg:k:e:rs', '_t'])).toBe('200')
    expect((await admit('e', l, t0 + 15_002)).reply[1]).toBe('concurrency')
    // a's late settle still counts its usage once, and frees nothing twice.
    expect((await settle('e', a.id, 1, 1, t0 + 16_000))[0]).toBe(1)
    expect(await redis.send('HGET', ['cg:k:e:rs', '_t'])).toBe('200')
  })

  test('a lease that lapsed while its request still runs is taken again, with its reservation, at the next renewal', async () => {
    const t0 = 1_800_000_000_000
    const l = limits(1000, { maxConcurrent: 1, dailyBudgetNanos: 1_000_000 })
    const held = await admit('r', l, t0, 300)
    // Its instance could not reach Redis for longer than a lease: another admission frees the slot.
    const other = await admit('r', l, t0 + 16_000, 100)
    expect(other.reply[0]).toBe(1)
    expect(await redis.send('HGET', ['cg:k:r:rs', '_t'])).toBe('100')
    // Back in touch, the instance renews: the running request holds its slot and reservation again.
    expect(await redis.run(SCRIPTS.renew, [], ['15000', 'cg:k:r', held.id, '300', `now=${t0 + 16_500}`])).toBe(1)
    expect(await redis.send('HGET', ['cg:k:r:rs', '_t'])).toBe('400')
    expect(await redis.send('ZCARD', ['cg:k:r:fl'])).toBe(2)
    // A settled admission is not renewed back.
    await settle('r', held.id, 1, 1, t0 + 17_000)
    expect(await redis.run(SCRIPTS.renew, [], ['15000', 'cg:k:r', held.id, '300', `now=${t0 + 17_500}`])).toBe(0)
    expect(await redis.send('ZCARD', ['cg:k:r:fl'])).toBe(1)
  })

  test('a refusal reads at most 1,000 entries of a window, and its wait is never too short', async () => {
    const t0 = 1_800_000_000_000
    // 1,200 settles of one token, a millisecond apart.
    for (let i = 0; i < 1200; i++) {
      const { id } = await admit('scan', limits(100_000), t0 + i)
      await settle('scan', id, 1, 0, t0 + i)
    }
    // With 100 tokens a minute, 1,101 of them must leave: the exact wait ends when the one at t0 + 1100
    // leaves. That is past the 1,000 entries read, so the answer is when the newest (t0 + 1199) leaves.
    const now = t0 + 2000
    const refused = (await admit('scan', limits(100_000, { tokensPerMinute: 100 }), now)).reply
    expect(refused.slice(0, 3)).toEqual([0, 'tokens', t0 + 1199 + 60_000 - now])
    // Within the 1,000 read, the wait is exact.
    expect((await admit('scan', limits(100_000, { tokensPerMinute: 1000 }), now)).reply.slice(0, 3)).toEqual([0, 'tokens', t0 + 200 + 60_000 - now])
  })

  test('budgets: settled spend plus reservations; refused at the budget until the next UTC day', async () => {
    const now = Date.UTC(2026, 10, 24, 23, 0, 0)
    const l = limits(1000, { dailyBudgetNanos: 1000 })
    const first = await admit('f', l, now, 600)
    expect(first.reply[0]).toBe(1)
    // 600 reserved: a second reservation of 600 still starts (600 < 1000), a third is refused.
    expect((await admit('f', l, now, 600)).reply[0]).toBe(1)
    expect((await admit('f', l, now, 600)).reply.slice(0, 3)).toEqual([0, 'budget_day', 3_600_000])
    await settle('f', first.id, 1, 900, now + 1)
    expect((await admit('f', l, Date.UTC(2026, 10, 25, 0, 0, 0), 600)).reply[0]).toBe(1)
  })

  test('UTC periods on Redis: the month key and the time to the next month agree with the gateway for every day of 2024-2031', async () => {
    const l = limits(1_000_000, { monthlyTokenQuota: 1 })
    for (let day = Date.UTC(2024, 0, 1); day < Date.UTC(2032, 0, 1); day += 86_400_000 * 7 + 3_600_000) {
      const { id } = await admit('g', l, day)
      await settle('g', id, 1, 0, day)
      const refused = (await admit('g', l, day)).reply
      expect(`${utcDate(day)} ${refused[1]} ${refused[2]}`).toBe(`${utcDate(day)} quota_month ${msUntilNextMonth(day)}`)
      const month = utcDate(day).slice(0, 7).replace('-', '')
      expect(await redis.send('HGET', [`cg:k:g:m:${month}`, 'tk'])).toBe('1')
      await redis.send('DEL', [`cg:k:g:m:${month}`])
    }
  })

  test('a Redis that forgot the scripts (SCRIPT FLUSH) runs them again; not seeded: -1', async () => {
    await redis.send('SCRIPT', ['FLUSH'])
    expect((await admit('h', limits(5), 1_800_000_000_000)).reply[0]).toBe(1)
    await redis.send('DEL', ['cg:ready'])
    expect((await admit('h', limits(5), 1_800_000_000_000)).reply).toEqual([-1])
  })

  describe('the limiter', () => {
    const baseline = (usage: Map<string, PeriodUsage>): QuotaBaseline => ({
      dayUsage: async () => ({ requests: 0, costNanos: 0 }),
      monthUsage: async () => ({ tokens: 0, costNanos: 0 }),
      allKeys: async () => usage,
    })
    const limiterOn = (connection: RedisConnection, usage = new Map<string, PeriodUsage>()) =>
      new RedisLimiter(connection, {
        instanceId: `test-${++nextId}`,
        leaseMs: 15_000,
        rememberMs: 60_000,
        baseline: baseline(usage),
        pending: PendingSettles.create(null),
        log: createLogger('error', { write() {} }),
      })
    const entry = (keyId: string): UsageEntry => ({
      keyId,
      alias: 'local/echo',
      upstream: 'local',
      error: false,
      promptTokens: 2,
      completionTokens: 3,
      costNanos: 40,
      latencyMs: 1,
      at: Date.now(),
    })

    test('an emptied Redis is seeded from the database once: quotas go on from the stored usage', async () => {
      await redis.send('FLUSHALL', [])
      const usage = new Map([['seeded', { requestsToday: 9, costToday: 0, tokensThisMonth: 0, costThisMonth: 0 }]])
      const limiters = [limiterOn(redis, usage), limiterOn(redis, usage), limiterOn(redis, usage)]
      const l = limits(100, { dailyRequestQuota: 10 })
      const answers = await Promise.all(limiters.map((limiter) => limiter.admit('seeded', l, Date.now())))
      expect(answers.filter((a) => a.ok)).toHaveLength(1)
      expect(answers.filter((a) => !a.ok).map((a) => !a.ok && a.error.code)).toEqual(['quota_exceeded', 'quota_exceeded'])
      expect(await redis.send('EXISTS', ['cg:ready'])).toBe(1)
    })

    test('settle through the port appends the entry with its exact counters; a second call does nothing', async () => {
      const limiter = limiterOn(redis)
      const admission = await limiter.admit('port', limits(10), Date.now())
      if (!admission.ok) throw admission.error
      await admission.settle(entry('port'))
      await admission.settle(entry('port'))
      const stream = (await redis.send('XRANGE', ['cg:usage', '-', '+'])) as [string, string[]][]
      expect(stream).toHaveLength(1)
      expect(JSON.parse(stream[0]![1][1]!)).toEqual(['port', 'local/echo', 'local', 0, 2, 3, 1, expect.any(Number), 40])
    })

    test("a cache hit's entry in the stream keeps what it saved, and never its admission", async () => {
      const limiter = limiterOn(redis)
      const admission = await limiter.admit('hit', limits(10), Date.now())
      if (!admission.ok) throw admission.error
      await admission.settle({ ...entry('hit'), promptTokens: 0, completionTokens: 0, costNanos: 0, cacheSavedNanos: 1_500 })
      const stream = (await redis.send('XRANGE', ['cg:usage', '-', '+'])) as [string, string[]][]
      const line = stream.map(([, fields]) => JSON.parse(fields[1]!) as unknown[]).find((encoded) => encoded[0] === 'hit')
      expect(line).toEqual(['hit', 'local/echo', 'local', 0, 0, 0, 1, expect.any(Number), 0, null, null, 1_500])
    })

    test('Redis unreachable: admission fails fast with 503 limiter_unavailable; a settle is kept and replayed when Redis is back', async () => {
      const limiter = limiterOn(redis)
      const admission = await limiter.admit('outage', limits(10), Date.now())
      if (!admission.ok) throw admission.error
      const pending = PendingSettles.create(null)
      const cut = new RedisConnection(`redis://127.0.0.1:${server.port}`, 200)
      await cut.connect()
      const cutLimiter = new RedisLimiter(cut, {
        instanceId: 'cut',
        leaseMs: 15_000,
        rememberMs: 60_000,
        baseline: baseline(new Map()),
        pending,
        log: createLogger('error', { write() {} }),
      })
      const held = await cutLimiter.admit('outage', limits(10), Date.now())
      if (!held.ok) throw held.error
      await server.stop()
      try {
        const refused = await cutLimiter.admit('outage', limits(10), Date.now()).catch((error: unknown) => error)
        expect(refused).toMatchObject({ type: 'overloaded_error', code: 'limiter_unavailable' })
        await held.settle(entry('outage'))
        expect(pending.size).toBe(1)
      } finally {
        await server.start()
      }
      // Once Redis is back, the kept settle lands, once.
      await waitFor(async () => {
        await cutLimiter.replayPending().catch(() => {})
        return pending.size === 0
      }, 'the kept settle to be replayed')
      await waitFor(() => redis.send('PING', []).catch(() => false), 'the first connection to reconnect')
      await admission.settle(entry('outage'))
      await cutLimiter.replayPending()
      expect(await redis.send('XLEN', ['cg:usage'])).toBe(2)
      cut.close()
    })
  })
})
