import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { createLogger } from '../../src/log'
import { RedisConnection } from '../../src/storage/redis/connection'
import { RedisUsageStream } from '../../src/storage/redis/usage-stream'
import { openSqliteStores } from '../../src/storage/sqlite'
import type { Stores } from '../../src/storage/types'
import type { UsageEntry } from '../../src/usage/entry'
import { decodeEntry, encodeEntry } from '../../src/usage/journal'
import type { UsageStore } from '../../src/usage/store'
import { SETUP_MS, setup, teardown, TEARDOWN_MS, TEST_MS } from '../support/hooks'
import { describeWithServers, type RedisServer, startRedis } from '../support/servers'

/**
 * Regressions found when the suite ran under load: usage counted twice in cluster mode.
 * - A settle kept in a local journal (Redis did not answer in time) lost its admission's epoch when
 *   read back, so its replay looked like a settle whose admission Redis had lost, and counted again.
 * - An instance whose fold found every entry it had read already folded by another instance wrote
 *   its own, older fold point back, so the next fold counted those entries a second time.
 */
setDefaultTimeout(TEST_MS)

const entry = (i: number): UsageEntry => ({
  keyId: 'key-1',
  alias: 'local/echo',
  upstream: 'local',
  error: false,
  promptTokens: 2,
  completionTokens: 3,
  costNanos: 0,
  latencyMs: 1,
  at: Date.UTC(2026, 10, 26, 12, 0, i),
})

describe('a settle read back from a local journal', () => {
  test('keeps its admission and its epoch, so a replay of it counts once', () => {
    const kept = { ...entry(1), admissionId: 'inst:1', admissionEpoch: 'epoch-7' }
    expect(decodeEntry(JSON.parse(JSON.stringify(encodeEntry(kept))))).toEqual(kept)
  })
})

describeWithServers('the shared usage stream', ['redis'], () => {
  let server: RedisServer
  let redis: RedisConnection
  let stores: Stores

  setup(async () => {
    server = await startRedis()
    redis = new RedisConnection(server.url, 2000)
    await redis.connect()
    stores = openSqliteStores(':memory:')
  }, SETUP_MS)

  teardown(async () => {
    redis?.close()
    await stores?.close()
    await server?.dispose()
  }, TEARDOWN_MS)

  test('an instance that finds its entries folded by another never moves the fold point back: nothing counts twice', async () => {
    for (let seq = 1; seq <= 20; seq++) {
      const e = entry(seq)
      await redis.send('XADD', ['cg:usage', `${seq}-0`, 'e', JSON.stringify(encodeEntry(e)), 't', String(e.at)])
    }
    const log = createLogger('error')
    // Entries stay in the stream (as when a trim has not run yet): only the fold point keeps them from counting again.
    const untrimmed = { send: (command: string, args: string[]) => (command === 'XTRIM' ? Promise.resolve(0) : redis.send(command, args)) } as RedisConnection
    const first = new RedisUsageStream(untrimmed, stores.usage, log)
    // The second instance reads the same entries, then, before its transaction, the first folds them all.
    const racing: UsageStore = {
      ...stores.usage,
      fold: async (journal, plan) => {
        await first.fold()
        return stores.usage.fold(journal, plan)
      },
    }
    const second = new RedisUsageStream(untrimmed, racing, log)
    await second.fold()

    // More usage arrives; whoever folds it next must add only what is new.
    for (let seq = 21; seq <= 25; seq++) {
      const e = entry(seq)
      await redis.send('XADD', ['cg:usage', `${seq}-0`, 'e', JSON.stringify(encodeEntry(e)), 't', String(e.at)])
    }
    await new RedisUsageStream(untrimmed, stores.usage, log).fold()

    const rows = await stores.usageReads.rows({ from: '2026-11-26', to: '2026-11-26' })
    expect(rows.reduce((sum, row) => sum + row.requests, 0)).toBe(25)
  })
})
