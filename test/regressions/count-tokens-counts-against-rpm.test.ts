import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { ADMIN_KEY, type Cluster, createKey, startCluster } from '../support/cluster'
import { tempDir, writeConfig } from '../support/gateway'
import { SETUP_MS, TEARDOWN_MS, TEST_MS } from '../support/hooks'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { describeWithServers } from '../support/servers'

/**
 * Regression (issue 23, point 3): `/v1/messages/count_tokens` only peeked at the limiter, so a key
 * of a 2-requests-per-minute tier called it 5 times in a row and got 5 answers. Now it is admitted
 * like any request: it takes its place in the request window (429 with Retry-After past the limit,
 * exact across instances), yet it is released rather than settled, so it is still no request in
 * usage and does not use up the daily request quota.
 */
setDefaultTimeout(TEST_MS)

const CONFIG = `
[tiers.tight]
requests_per_minute = 2
tokens_per_minute = 100000000
max_concurrent = 10

[tiers.quota]
requests_per_minute = 1000
tokens_per_minute = 100000000
max_concurrent = 10
daily_request_quota = 2

[upstreams.local]
kind = "mock"

[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]
`

const count = (url: string, key: string) =>
  fetch(`${url}/v1/messages/count_tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'local/echo', messages: [{ role: 'user', content: 'one two three' }] }),
  })

const chat = (url: string, key: string) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'local/echo', messages: [{ role: 'user', content: 'hello' }] }),
  })

/** The key's own usage from yesterday to tomorrow (UTC), so a run across midnight sees all of it. */
async function requestsInUsage(url: string, key: string): Promise<number> {
  const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10)
  const response = await fetch(`${url}/v1/usage?from=${day(-1)}&to=${day(1)}`, { headers: { authorization: `Bearer ${key}` } })
  expect(response.status).toBe(200)
  return ((await response.json()) as { totals: { requests: number } }).totals.requests
}

/** The same checks for one process on SQLite and for several on Redis: `urls` are the instances, used in turn. */
function checks(urls: () => string[], newKey: (tier: string) => Promise<string>) {
  const at = (i: number) => urls()[i % urls().length]!

  test('a 2 rpm key gets 2 counts, then 429s with Retry-After; the window it filled refuses its chat too; none is a request in usage', async () => {
    const key = await newKey('tight')
    const statuses: number[] = []
    for (let i = 0; i < 5; i++) {
      const response = await count(at(i), key)
      statuses.push(response.status)
      const body = (await response.json()) as { input_tokens?: number; type?: string; error?: { type: string } }
      if (response.status === 200) expect(body.input_tokens).toBe(3)
      else {
        expect(body).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } })
        expect(Number(response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
        expect(response.headers.get('x-ratelimit-remaining')).toBe('0')
      }
    }
    expect(statuses).toEqual([200, 200, 429, 429, 429])
    expect((await chat(at(5), key)).status).toBe(429)
    expect(await requestsInUsage(at(0), key)).toBe(0)
  })

  test('counts do not use up the daily request quota, but a spent quota refuses them like any request', async () => {
    const key = await newKey('quota')
    for (let i = 0; i < 4; i++) expect((await count(at(i), key)).status).toBe(200)
    expect((await chat(at(0), key)).status).toBe(200)
    expect((await chat(at(1), key)).status).toBe(200)
    expect((await chat(at(2), key)).status).toBe(429)
    const refused = await count(at(0), key)
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(await requestsInUsage(at(1), key)).toBe(2)
  })
}

describe('count_tokens against the request limit, one process on SQLite', () => {
  const dir = tempDir()
  let gw: GatewayProcess
  beforeAll(async () => {
    gw = await spawnGateway({ GATEWAY_DB: `${dir.path}/gateway.sqlite`, GATEWAY_CONFIG: writeConfig(dir.path, CONFIG), GATEWAY_ADMIN_KEY: ADMIN_KEY })
  }, SETUP_MS)
  afterAll(async () => {
    await gw?.stop()
    dir[Symbol.dispose]()
  }, TEARDOWN_MS)

  checks(
    () => [gw.url],
    async (tier) => (await createKey(gw.url, { name: `count-${tier}`, tier })).key,
  )
})

describeWithServers('count_tokens against the request limit, 3 instances on Redis and Postgres', ['redis', 'postgres'], () => {
  let cluster: Cluster
  let instances: GatewayProcess[]
  beforeAll(async () => {
    cluster = await startCluster(CONFIG)
    instances = await cluster.start(3)
  }, SETUP_MS)
  afterAll(async () => {
    await cluster?.dispose()
  }, TEARDOWN_MS)

  checks(
    () => instances.map((instance) => instance.url),
    async (tier) => (await createKey(instances[0]!.url, { name: `count-${tier}`, tier })).key,
  )
})
