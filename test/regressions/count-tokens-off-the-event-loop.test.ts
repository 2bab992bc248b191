import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { ADMIN_KEY, type Cluster, createKey, startCluster } from '../support/cluster'
import { tempDir, writeConfig } from '../support/gateway'
import { SETUP_MS, TEARDOWN_MS, TEST_MS } from '../support/hooks'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { describeWithServers } from '../support/servers'
import { waitFor } from '../support/wait'

/**
 * Regression (issue 23, point 3): OpenAI-kind targets counted tokens with o200k on the event loop,
 * about 120 ms per 880 KB body, so six callers in a loop raised another key's chat p50 from 0.7 ms
 * to 341 ms. Now the tokenizer runs in a worker thread. Shown without timing: a key allowed one
 * request at a time sends a big count; once it was admitted (the key's window holds one request
 * more, and a small count of the key is refused for concurrency), another key's chat is answered,
 * and the big count is still in flight after that answer. A tokenizer on the event loop leaves no
 * such moment: nothing else is answered between its admission and its answer.
 */
setDefaultTimeout(TEST_MS)

/** A prompt of about 12 MB: seconds of tokenizer time, against a chat answered in a millisecond. */
const BIG_PROMPT_CHARS = 12_000_000
const MAX_BODY_BYTES = String(16 * 1024 * 1024)

const config = (upstream: string) => `
[tiers.one_at_a_time]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 1

[tiers.other]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 100

[upstreams.local]
kind = "mock"

[upstreams.oa]
kind = "openai"
base_url = "${upstream}"
api_key_env = "FAKE_UPSTREAM_KEY"

[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]

[aliases."oa/gpt"]
targets = [{ upstream = "oa", model = "gpt-4o" }]
`

function bigPrompt(): string {
  const words = ['alpha', 'beta', 'gamma', 'delta', 'lorem', 'ipsum', 'dolor', '12345', 'qu!x', 'über']
  const parts: string[] = []
  for (let i = 0, size = 0; size < BIG_PROMPT_CHARS; i++) {
    const word = words[(i * 7) % words.length]!
    parts.push(word)
    size += word.length + 1
  }
  return parts.join(' ')
}

const count = (url: string, key: string, content: string) =>
  fetch(`${url}/v1/messages/count_tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: 'oa/gpt', messages: [{ role: 'user', content }] }),
  })

const chat = (url: string, key: string) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: 'local/echo', messages: [{ role: 'user', content: 'hello' }] }),
  })

/**
 * The key's requests left in its window, from a body refused after authentication (a 400 carries
 * the rate-limit headers too): it asks without being admitted, so it never takes the key's slot.
 */
async function remaining(url: string, key: string): Promise<number> {
  const response = await fetch(`${url}/v1/messages/count_tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
    body: '{"model":',
  })
  expect(response.status).toBe(400)
  await response.arrayBuffer()
  return Number(response.headers.get('x-ratelimit-remaining'))
}

/** Whether a small count of the key is refused because its one slot is taken (by the big count). */
async function slotTaken(url: string, key: string): Promise<boolean> {
  const response = await count(url, key, 'small')
  const body = (await response.json()) as { error?: { message: string } }
  return response.status === 429 && /Concurrency limit/.test(body.error?.message ?? '')
}

async function answeredWhileCounting(url: string, newKey: (tier: string) => Promise<string>) {
  const counter = await newKey('one_at_a_time')
  const other = await newKey('other')
  // The first count loads the tokenizer's tables (in the worker); the test is about counting itself.
  expect((await count(url, counter, 'warm up')).status).toBe(200)
  const before = await remaining(url, counter)
  let bigDone = false
  const big = count(url, counter, bigPrompt()).finally(() => (bigDone = true))
  await waitFor(async () => (await remaining(url, counter)) < before, 'the big count to be admitted (one request fewer left in the window)')
  expect(await slotTaken(url, counter)).toBe(true)
  const answer = await chat(url, other)
  expect(answer.status).toBe(200)
  expect(bigDone).toBe(false)
  expect(await slotTaken(url, counter)).toBe(true)
  const counted = await big
  expect(counted.status).toBe(200)
  expect(((await counted.json()) as { input_tokens: number }).input_tokens).toBeGreaterThan(1_000_000)
}

const upstream = () => Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('not used', { status: 500 }) })

describe('count_tokens off the event loop, one process on SQLite', () => {
  const dir = tempDir()
  const server = upstream()
  let gw: GatewayProcess
  beforeAll(async () => {
    gw = await spawnGateway({
      GATEWAY_DB: `${dir.path}/gateway.sqlite`,
      GATEWAY_CONFIG: writeConfig(dir.path, config(`http://127.0.0.1:${server.port}/v1`)),
      GATEWAY_ADMIN_KEY: ADMIN_KEY,
      GATEWAY_MAX_BODY_BYTES: MAX_BODY_BYTES,
      FAKE_UPSTREAM_KEY: 'sk-fake',
    })
  }, SETUP_MS)
  afterAll(async () => {
    await gw?.stop()
    server.stop(true)
    dir[Symbol.dispose]()
  }, TEARDOWN_MS)

  test("another key's chat is answered while a big count is being tokenized", () =>
    answeredWhileCounting(gw.url, async (tier) => (await createKey(gw.url, { name: tier, tier })).key))
})

describeWithServers('count_tokens off the event loop, 3 instances on Redis and Postgres', ['redis', 'postgres'], () => {
  const server = upstream()
  let cluster: Cluster
  let instances: GatewayProcess[]
  beforeAll(async () => {
    cluster = await startCluster(config(`http://127.0.0.1:${server.port}/v1`))
    instances = await cluster.start(3, { GATEWAY_MAX_BODY_BYTES: MAX_BODY_BYTES, FAKE_UPSTREAM_KEY: 'sk-fake' })
  }, SETUP_MS)
  afterAll(async () => {
    await cluster?.dispose()
    server.stop(true)
  }, TEARDOWN_MS)

  test("another key's chat is answered by the instance while it tokenizes a big count", () =>
    answeredWhileCounting(instances[1]!.url, async (tier) => (await createKey(instances[0]!.url, { name: tier, tier })).key))
})
