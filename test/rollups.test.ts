import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { latencyBucket } from '../db/latency'
import { openSqlite } from '../src/storage/sqlite/open'
import { SqliteUsageStore } from '../src/storage/sqlite/usage'
import { SqliteUsageReads } from '../src/storage/sqlite/usage-reads'
import { UsageRecorder } from '../src/usage/recorder'
import { percentileMs, type SeriesQuery, UsageReports } from '../src/usage/reports'
import { inProcessGateway } from './support/gateway'
import { TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

const T0 = Date.parse('2026-11-22T10:00:00Z')
const MIN = 60_000

const DAY = 86_400_000

async function seeded() {
  const storage = openSqlite(':memory:')
  const store = new SqliteUsageStore(storage.db)
  const recorder = await UsageRecorder.open(store, null)
  const reports = new UsageReports(new SqliteUsageReads(storage.db), () => recorder.fold())
  const record = (at: number, latencyMs: number, extra: Partial<Parameters<UsageRecorder['record']>[0]> = {}) =>
    recorder.record({
      keyId: 'k1',
      alias: 'a/one',
      upstream: 'up',
      error: false,
      promptTokens: 10,
      completionTokens: 5,
      costNanos: 1001,
      latencyMs,
      at,
      ...extra,
    })
  const series = (query: SeriesQuery) => reports.series(query)
  // What the gateway's pruning timer does at `now` with a retention of `days`.
  const prune = (now: number, days: number) => store.pruneMinutes(now - days * DAY)
  return { storage, record, series, prune }
}

describe('per-minute rollups', () => {
  test('a known sequence gives exact counts and percentiles per bucket', async () => {
    const { storage, record, series: usageSeries } = await seeded()
    // Minute 0: 4 requests (one error), latencies 3, 8, 20, 40 ms. Minute 2: 2 requests of 300 ms.
    // Minute 5: another key and alias.
    await Promise.all([
      record(T0 + 1_000, 3),
      record(T0 + 2_000, 8),
      record(T0 + 3_000, 20, { error: true, promptTokens: 0, completionTokens: 0, costNanos: 0 }),
      record(T0 + 59_999, 40),
      record(T0 + 2 * MIN, 300),
      record(T0 + 2 * MIN + 30_000, 300),
      record(T0 + 5 * MIN, 1, { keyId: 'k2', alias: 'b/two' }),
    ])
    const series = await usageSeries({ from: T0, to: T0 + 10 * MIN, bucket: 'minute' })
    expect(series).toHaveLength(10)
    expect(series[0]).toEqual({
      t: '2026-11-22T10:00:00.000Z',
      requests: 4,
      errors: 1,
      prompt_tokens: 30,
      completion_tokens: 15,
      cost_usd: 0.000003003,
      cache_saved_usd: 0,
      p50_ms: 10,
      p95_ms: 45,
    })
    expect(series[1]).toEqual({
      t: '2026-11-22T10:01:00.000Z',
      requests: 0,
      errors: 0,
      prompt_tokens: 0,
      completion_tokens: 0,
      cost_usd: 0,
      cache_saved_usd: 0,
      p50_ms: null,
      p95_ms: null,
    })
    // Both in the 250-500 ms bucket: interpolated within it.
    expect(series[2]).toMatchObject({ requests: 2, p50_ms: 375, p95_ms: 488 })
    expect(series[5]).toMatchObject({ requests: 1, p50_ms: 3 })

    const filtered = await usageSeries({ from: T0, to: T0 + 10 * MIN, bucket: 'minute', keyId: 'k1', alias: 'a/one', upstream: 'up' })
    expect(filtered.reduce((sum, p) => sum + p.requests, 0)).toBe(6)
    expect((await usageSeries({ from: T0, to: T0 + 10 * MIN, bucket: 'minute', alias: 'b/two' })).reduce((sum, p) => sum + p.requests, 0)).toBe(1)

    const hourly = await usageSeries({ from: T0, to: T0 + 2 * 3_600_000, bucket: 'hour' })
    expect(hourly).toHaveLength(2)
    expect(hourly[0]).toMatchObject({ requests: 7, errors: 1, prompt_tokens: 60, completion_tokens: 30 })
    expect(hourly[1]!.requests).toBe(0)
    storage.close()
  })

  test('day buckets count from the daily counters, beyond the rollup retention', async () => {
    const { storage, record, series: usageSeries, prune } = await seeded()
    await Promise.all([record(T0 - 20 * 86_400_000, 5), record(T0 - 20 * 86_400_000, 5), record(T0, 5)])
    // The rollups of 20 days ago are pruned (7-day retention); the daily counters are not.
    expect(await prune(T0, 7)).toBe(1)
    const days = await usageSeries({ from: T0 - 29 * 86_400_000, to: T0 + 1, bucket: 'day' })
    expect(days).toHaveLength(30)
    const old = days.find((d) => d.t.startsWith('2026-11-02'))!
    expect(old).toMatchObject({ requests: 2, p50_ms: null })
    expect(days.at(-1)).toMatchObject({ t: '2026-11-22T00:00:00.000Z', requests: 1, p50_ms: 3 })
    storage.close()
  })

  test('retention pruning with a fake clock removes exactly what is older than the retention', async () => {
    const { storage, record, prune } = await seeded()
    await Promise.all([record(T0, 5), record(T0 + 3 * 86_400_000, 5), record(T0 + 8 * 86_400_000, 5)])
    const count = () => (storage.sqlite.query('SELECT count(*) AS n FROM usage_minute').get() as { n: number }).n
    expect(count()).toBe(3)
    expect(await prune(T0 + 7 * 86_400_000, 7)).toBe(0)
    expect(await prune(T0 + 10 * 86_400_000 + 1, 7)).toBe(1)
    expect(count()).toBe(2)
    expect(await prune(T0 + 20 * 86_400_000, 7)).toBe(2)
    expect(count()).toBe(0)
    storage.close()
  })

  test('latency buckets and percentiles', () => {
    expect(latencyBucket(0)).toBe(0)
    expect(latencyBucket(5)).toBe(0)
    expect(latencyBucket(5.1)).toBe(1)
    expect(latencyBucket(120_000)).toBe(13)
    expect(percentileMs([0, 0, 0], 0.5)).toBeNull()
    expect(percentileMs([2, 2], 0.5)).toBe(5)
  })
})

describe('GET /admin/usage/series', () => {
  test('reads the rollups written by real requests, with a fake clock', async () => {
    let now = T0
    const gw = await inProcessGateway({ env: { GATEWAY_ADMIN_KEY: 'admin-key-for-tests-0123456789' }, now: () => now })
    try {
      const chat = () =>
        gw.request('/v1/chat/completions', {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.key}` },
          body: JSON.stringify({ model: 'local/echo', messages: [{ role: 'user', content: 'one two three' }] }),
        })
      for (const minute of [0, 0, 7, 30]) {
        now = T0 + minute * MIN + 1000
        expect((await chat()).status).toBe(200)
      }
      now = T0 + 59 * MIN
      const admin = { authorization: 'Bearer admin-key-for-tests-0123456789' }
      const response = await gw.request('/admin/usage/series?bucket=minute', { headers: admin })
      expect(response.status).toBe(200)
      const body = (await response.json()) as { bucket: string; data: { t: string; requests: number; prompt_tokens: number }[] }
      expect(body.bucket).toBe('minute')
      expect(body.data).toHaveLength(60)
      const active = body.data.filter((p) => p.requests > 0)
      expect(active.map((p) => [p.t.slice(11, 16), p.requests, p.prompt_tokens])).toEqual([
        ['10:00', 2, 6],
        ['10:07', 1, 3],
        ['10:30', 1, 3],
      ])
      const bad = await gw.request('/admin/usage/series?bucket=week', { headers: admin })
      expect(bad.status).toBe(400)
      expect((await gw.request('/admin/usage/series?from=yesterday', { headers: admin })).status).toBe(400)
      expect((await gw.request('/admin/usage/series')).status).toBe(401)
    } finally {
      gw.close()
    }
  })
})
