import { expect, setDefaultTimeout, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { adminFetch, chat, type Cluster, createKey, heldUpstream, startCluster } from '../support/cluster'
import type { GatewayProcess } from '../support/process'
import { describeWithServers, startRedis } from '../support/servers'
import { waitFor } from '../support/wait'
import { setup, teardown, TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

const config = (upstreamUrl: string, extraAlias = '') => `
[tiers.free]
requests_per_minute = 20
tokens_per_minute = 20000
max_concurrent = 4

[tiers.rpm50]
requests_per_minute = 50
tokens_per_minute = 100000000
max_concurrent = 1000

[tiers.conc10]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 10

[tiers.budget]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 1000
daily_budget_usd = 0.03

[tiers.pro]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 1000

[upstreams.local]
kind = "mock"

[upstreams.held]
kind = "openai"
base_url = "${upstreamUrl}"
max_retries = 0
timeout_ms = 60000

[prices.echo]
input = 1
output = 1000

[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]

[aliases."held/model"]
targets = [{ upstream = "held", model = "m" }]
${extraAlias}`

const EXTRA_ALIAS = `
[aliases."local/extra"]
targets = [{ upstream = "local", model = "echo" }]
`

/**
 * Sends `count` requests at once, spread over the instances in turn; returns the responses' statuses
 * and error codes. `onAnswer` is called as each response has been read, for a test to count them.
 */
async function burst(instances: GatewayProcess[], key: string, count: number, content = 'a b c', model = 'local/echo', onAnswer = () => {}) {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const response = await chat(instances[i % instances.length]!.url, key, content, model)
      const body = (await response.json()) as { error?: { code?: string } }
      onAnswer()
      return { status: response.status, code: body.error?.code ?? null, retryAfter: response.headers.get('retry-after') }
    }),
  )
}

describeWithServers('several instances as one gateway (3 processes, one Redis, one Postgres)', ['redis', 'postgres'], () => {
  let cluster: Cluster
  let upstream: ReturnType<typeof heldUpstream>
  let a: GatewayProcess
  let b: GatewayProcess
  let c: GatewayProcess
  setup(async () => {
    upstream = heldUpstream()
    cluster = await startCluster(config(upstream.url, EXTRA_ALIAS))
    // Three instances starting together on a new database: they race to migrate, sync the config
    // and make the first key.
    ;[a, b, c] = (await cluster.start(3)) as [GatewayProcess, GatewayProcess, GatewayProcess]
  })
  teardown(async () => {
    upstream?.release()
    await cluster?.dispose()
    upstream?.stop()
  })

  test('three instances started together on a new database: all serve, and exactly one first key was made', async () => {
    for (const instance of [a, b, c]) expect((await fetch(`${instance.url}/health`)).status).toBe(200)
    const keys = (await (await adminFetch(a.url, '/admin/keys')).json()) as { data: { name: string }[] }
    expect(keys.data.filter((k) => k.name === 'first key')).toHaveLength(1)
    const migrations = await cluster.postgres.psql('SELECT count(*) FROM drizzle.__drizzle_migrations', cluster.databaseUrl.split('/').at(-1))
    expect(Number(migrations)).toBeGreaterThanOrEqual(1)
  })

  test('200 concurrent requests spread over three instances against a 50 rpm key: exactly 50 succeed, 10 times in a row', async () => {
    for (let round = 0; round < 10; round++) {
      const { key } = await createKey([a, b, c][round % 3]!.url, { name: `rpm-${round}`, tier: 'rpm50' })
      const results = await burst([a, b, c], key, 200)
      const served = results.filter((r) => r.status === 200).length
      expect(`round ${round}: ${served} served`).toBe(`round ${round}: 50 served`)
      for (const refused of results.filter((r) => r.status !== 200)) {
        expect(refused).toMatchObject({ status: 429, code: 'rate_limit_exceeded' })
        expect(Number(refused.retryAfter)).toBeGreaterThan(0)
      }
    }
  })

  test('max_concurrent = 10: never 11 in flight at the upstream, whatever instance they came through', async () => {
    const { key } = await createKey(b.url, { name: 'conc', tier: 'conc10' })
    for (let round = 0; round < 3; round++) {
      let answered = 0
      const answers = burst([a, b, c], key, 40, 'hold', 'held/model', () => answered++)
      // Every request is either held by the upstream or already refused: then the count is final.
      // Ten held is not enough on a busy machine: requests still on their way would be admitted
      // after the release, and held again with no one left to release them.
      await waitFor(
        () => upstream.held === 10 && answered === 30,
        () => `10 requests held at the upstream and the other 30 answered (held ${upstream.held}, answered ${answered})`,
      )
      upstream.release()
      const results = await answers
      expect(results.filter((r) => r.status === 200)).toHaveLength(10)
      for (const refused of results.filter((r) => r.status !== 200)) expect(refused).toMatchObject({ status: 429, code: 'concurrency_limit_exceeded' })
    }
    expect(upstream.most).toBe(10)
  })

  test('a budget holds across instances: spend passes it by at most one request, and every refusal is budget_exceeded', async () => {
    const { key, id } = await createKey(c.url, { name: 'budget', tier: 'budget' })
    // One request: 3 prompt + 3 completion words at $1 and $1000 per million = 3,003,000 nano-dollars.
    const REQUEST_NANOS = 3_003_000
    let served = 0
    for (let wave = 0; wave < 20; wave++) {
      const results = await burst([a, b, c], key, 100)
      for (const refused of results.filter((r) => r.status !== 200)) expect(refused).toMatchObject({ status: 429, code: 'budget_exceeded' })
      const ok = results.filter((r) => r.status === 200).length
      served += ok
      if (ok === 0) break
    }
    const usage = (await (await adminFetch(b.url, `/admin/usage?key_id=${id}`)).json()) as { totals: { cost_usd: number; requests: number } }
    const spent = Math.round(usage.totals.cost_usd * 1e9)
    expect(usage.totals.requests).toBe(served)
    expect(spent).toBe(served * REQUEST_NANOS)
    expect(spent).toBeGreaterThanOrEqual(30_000_000)
    expect(spent).toBeLessThanOrEqual(30_000_000 + REQUEST_NANOS)
    console.log(`budget $0.03 over three instances: ${served} requests served, spend ${spent} nano-dollars, over by ${spent - 30_000_000}`)
  })

  test('a key created on A works at once on B and C, 20 times in a row; revoked on A, it is refused on B and C', async () => {
    for (let i = 0; i < 20; i++) {
      const { key } = await createKey(a.url, { name: `new-${i}`, tier: 'pro' })
      const [onB, onC] = await Promise.all([chat(b.url, key), chat(c.url, key)])
      expect(`${i}: ${onB.status} ${onC.status}`).toBe(`${i}: 200 200`)
    }
    const { key, id } = await createKey(a.url, { name: 'to-revoke', tier: 'pro' })
    expect((await chat(b.url, key)).status).toBe(200)
    expect((await chat(c.url, key)).status).toBe(200)
    expect((await adminFetch(a.url, `/admin/keys/${id}`, { method: 'DELETE' })).status).toBe(200)
    expect((await chat(a.url, key)).status).toBe(401)
    for (const other of [b, c]) {
      const status = await waitFor(async () => {
        const response = await chat(other.url, key)
        await response.arrayBuffer()
        return response.status !== 200 && response.status
      }, 'the key revoked on A to be refused')
      expect(status).toBe(401)
    }
  })

  test('usage is visible on every instance: a request through A is in the usage B and C report', async () => {
    const { key, id } = await createKey(a.url, { name: 'visible', tier: 'pro' })
    expect((await chat(a.url, key, 'one two three four')).status).toBe(200)
    for (const other of [b, c]) {
      const response = await fetch(`${other.url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } })
      const usage = (await response.json()) as { totals: { requests: number; prompt_tokens: number } }
      expect(usage.totals).toMatchObject({ requests: 1, prompt_tokens: 4 })
    }
    // And without anyone asking, the instances' background folds put it in Postgres.
    await waitFor(
      async () =>
        Number(
          await cluster.postgres.psql(`SELECT coalesce(sum(requests), 0) FROM usage_daily WHERE key_id = '${id}'`, cluster.databaseUrl.split('/').at(-1)),
        ) === 1,
      'the request in usage_daily',
    )
  })

  test('a config reload on A reaches B and C: an alias the file stopped naming is gone everywhere', async () => {
    const { key } = await createKey(a.url, { name: 'reload', tier: 'pro' })
    for (const instance of [a, b, c]) expect((await chat(instance.url, key, 'hi', 'local/extra')).status).toBe(200)
    writeFileSync(cluster.configPath, config(upstream.url))
    expect((await adminFetch(a.url, '/admin/reload', { method: 'POST' })).status).toBe(200)
    for (const instance of [b, c]) {
      await waitFor(async () => {
        const models = (await (await fetch(`${instance.url}/v1/models`)).json()) as { data: { id: string }[] }
        return !models.data.some((m) => m.id === 'local/extra')
      }, 'the removed alias to leave /v1/models')
      expect((await chat(instance.url, key, 'hi', 'local/extra')).status).toBe(404)
    }
  })
})

describeWithServers('propagation without notifications (GATEWAY_PG_LISTEN=0 on two instances)', ['redis', 'postgres'], () => {
  let cluster: Cluster
  let a: GatewayProcess
  let others: GatewayProcess[]
  setup(async () => {
    cluster = await startCluster(config('http://127.0.0.1:9/v1'))
    ;[a] = (await cluster.start(1)) as [GatewayProcess]
    others = await cluster.start(2, { GATEWAY_PG_LISTEN: '0' })
  })
  teardown(async () => {
    await cluster?.dispose()
  })

  test('new keys work at once and revocations arrive by polling alone', async () => {
    const { key, id } = await createKey(a.url, { name: 'polled', tier: 'pro' })
    for (const other of others) expect((await chat(other.url, key)).status).toBe(200)
    expect((await adminFetch(a.url, `/admin/keys/${id}`, { method: 'DELETE' })).status).toBe(200)
    for (const other of others) {
      const status = await waitFor(async () => {
        const response = await chat(other.url, key)
        await response.arrayBuffer()
        return response.status !== 200 && response.status
      }, 'the revoked key to be refused by an instance that does not LISTEN')
      expect(status).toBe(401)
    }
  })
})

describeWithServers('Redis settings checked at start', ['redis', 'postgres'], () => {
  test('without persistence and with an eviction policy, the gateway warns naming both settings, and still serves', async () => {
    const redis = await startRedis({ appendonly: false, maxmemoryPolicy: 'allkeys-lru' })
    const cluster = await startCluster(config('http://127.0.0.1:9/v1'), { redis })
    try {
      const [instance] = (await cluster.start(1)) as [GatewayProcess]
      const warnings = await waitFor(() => {
        const lines = instance
          .output()
          .split('\n')
          .filter((line) => line.includes('"level":"warn"'))
        return lines.some((l) => l.includes('"setting":"appendonly"')) && lines.some((l) => l.includes('"setting":"maxmemory-policy"')) && lines
      }, 'warnings naming appendonly and maxmemory-policy')
      expect(warnings.join('\n')).toContain('allkeys-lru')
      const { key } = await createKey(instance.url, { name: 'warned', tier: 'pro' })
      expect((await chat(instance.url, key)).status).toBe(200)
    } finally {
      await cluster.dispose()
      await redis.dispose()
    }
  })
})
