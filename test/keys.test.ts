import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import parse from 'parse-prometheus-text-format'
import { tempDir, writeConfig } from './support/gateway'
import { type GatewayProcess, runCli, spawnGateway, startRefused } from './support/process'
import { waitFor } from './support/wait'
import { setup, teardown, TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

const ADMIN_KEY = 'admin-key-for-tests-0123456789'
const CHAT = JSON.stringify({ model: 'local/echo', messages: [{ role: 'user', content: 'hello there' }] })

const chat = (url: string, key: string, init: { body?: string; headers?: Record<string, string> } = {}) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...init.headers },
    body: init.body ?? CHAT,
  })

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024

async function metric(url: string, name: string): Promise<number> {
  const families = parse(await (await fetch(`${url}/metrics`)).text())
  const family = families.find((f) => f.name === name)
  return Number(family?.metrics[0]?.value ?? NaN)
}

const RATE_LIMIT_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'x-ratelimit-limit-tokens', 'x-ratelimit-remaining-tokens']

describe('a new key works on the very next request', () => {
  const dir = tempDir()
  const env = { GATEWAY_DB: `${dir.path}/gateway.sqlite`, GATEWAY_ADMIN_KEY: ADMIN_KEY }
  let a: GatewayProcess
  let b: GatewayProcess
  setup(async () => {
    a = await spawnGateway(env)
    b = await spawnGateway(env)
  })
  teardown(async () => {
    await Promise.all([a.stop(), b.stop()])
    dir[Symbol.dispose]()
  })

  test('created by the CLI while the gateway runs: used at once, 20 times in a row, never a 401', async () => {
    for (let i = 0; i < 20; i++) {
      const created = await runCli(['keys', 'create', '--name', `ci-${i}`, '--tier', 'pro', '--json'], env)
      expect(created.code).toBe(0)
      const { key } = JSON.parse(created.stdout) as { key: string }
      const response = await chat(a.url, key)
      expect(`${i}: ${response.status}`).toBe(`${i}: 200`)
    }
  })

  test('created through POST /admin/keys on one process: used at once on another, 20 times in a row', async () => {
    for (let i = 0; i < 20; i++) {
      const created = await fetch(`${b.url}/admin/keys`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_KEY}` },
        body: JSON.stringify({ name: `admin-${i}`, tier: 'pro' }),
      })
      expect(created.status).toBe(201)
      const { key, id } = (await created.json()) as { key: string; id: string }
      const onA = await chat(a.url, key)
      expect(`${i}: ${onA.status}`).toBe(`${i}: 200`)
      // Revoked on b: refused by b at once.
      expect((await fetch(`${b.url}/admin/keys/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN_KEY}` } })).status).toBe(200)
      expect((await chat(b.url, key)).status).toBe(401)
    }
  })

  test('a key revoked on one process is refused by the other within a second', async () => {
    const created = await fetch(`${a.url}/admin/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_KEY}` },
      body: JSON.stringify({ name: 'to-revoke', tier: 'pro' }),
    })
    const { key, id } = (await created.json()) as { key: string; id: string }
    expect((await chat(b.url, key)).status).toBe(200)
    await fetch(`${a.url}/admin/keys/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${ADMIN_KEY}` } })
    // b holds the key in its cache: only its poll of the key table (every 250 ms) can take it away.
    // Asked until it stops answering 200; a wall-clock bound here would only measure the machine.
    const status = await waitFor(async () => {
      const response = await chat(b.url, key)
      await response.arrayBuffer()
      return response.status !== 200 && response.status
    }, 'b to stop accepting the key revoked on a')
    expect(status).toBe(401)
  })

  test('10,000 requests with distinct made-up keys: all 401, no key-table reload, memory flat', async () => {
    const flood = async (count: number) => {
      const statuses = new Map<number, number>()
      let sent = 0
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (sent++ < count) {
            const made = `sk-cg-${crypto.randomUUID().replaceAll('-', '')}${'x'.repeat(8)}`
            const response = await chat(a.url, made)
            await response.arrayBuffer()
            statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
          }
        }),
      )
      return statuses
    }
    // No write of another process may land during the count. a's revocation in the test before
    // bumped the key-table version; a notices a version change only after another connection
    // commits (SQLite's data_version), and b folds the usage of the requests it served there up to
    // a second later. A usage read on b folds it now, so a's reload for it happens in the warm-up.
    expect((await fetch(`${b.url}/admin/usage`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })).status).toBe(200)
    // Warm up first, so the JIT and connection buffers are not counted as growth, and measure only
    // after a first flood: on a loaded machine the collector can lag through it (its heap still
    // growing to its working size), while a cache of refused keys would grow all along.
    await flood(2_000)
    const reloads = await metric(a.url, 'chatgate_key_cache_reloads_total')
    expect(await flood(10_000)).toEqual(new Map([[401, 10_000]]))
    // RSS moves by several MB as the collector runs: over 100,000 such requests it swung between 102
    // and 115 MB with no trend, and one pair of readings 10,000 requests apart differed by 10.9 MB.
    // So the lowest of three readings early is compared with the lowest of three late: a cache of
    // refused keys (about 1 KB a key) would add about 12 MB between them.
    const readings: number[] = []
    for (let i = 0; i < 6; i++) {
      expect(await flood(4_000)).toEqual(new Map([[401, 4_000]]))
      readings.push(rssMb(a.proc.pid))
    }
    expect(Math.min(...readings.slice(3)) - Math.min(...readings.slice(0, 3))).toBeLessThan(10)
    expect(await metric(a.url, 'chatgate_key_cache_reloads_total')).toBe(reloads)
  })
})

describe('authentication comes before the body', () => {
  const dir = tempDir()
  let gateway: GatewayProcess
  setup(async () => {
    gateway = await spawnGateway({ GATEWAY_DB: `${dir.path}/gateway.sqlite` }, { expectFirstKey: true })
  })
  teardown(async () => {
    await gateway.stop()
    dir[Symbol.dispose]()
  })

  test('a missing or bad key gets 401 whatever the body: malformed JSON, wrong type, too large', async () => {
    const bodies: [string, Record<string, string>][] = [
      ['{"model": "local/echo", "messages": [', {}],
      ['hello', { 'content-type': 'text/plain' }],
      ['x'.repeat(2 * 1024 * 1024), {}],
      ['{"model": 5}', {}],
    ]
    for (const [body, headers] of bodies) {
      for (const key of [null, 'sk-cg-not-a-real-key']) {
        const response = await fetch(`${gateway.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
          body,
        })
        expect(response.status).toBe(401)
        expect(await response.json()).toEqual({ error: { message: 'Unauthorized', type: 'authentication_error', param: null, code: null } })
        expect(response.headers.get('x-svc-tier')).toBeNull()
      }
    }
  })

  test("a valid key's 400, 413 and 415 carry its tier and every rate-limit header", async () => {
    const key = gateway.firstKey!
    const cases: [string, Record<string, string>, number][] = [
      ['{"model": "local/echo", "messages": [', {}, 400],
      ['x'.repeat(2 * 1024 * 1024), {}, 413],
      ['{"model":"local/echo","messages":[{"role":"user","content":"hi"}]}', { 'content-type': 'text/plain' }, 415],
      ['{"model": 5, "messages": []}', {}, 400],
    ]
    for (const [body, headers, status] of cases) {
      const response = await chat(gateway.url, key, { body, headers })
      expect(response.status).toBe(status)
      expect(((await response.json()) as { error: { type: string } }).error.type).toBe('invalid_request_error')
      expect(response.headers.get('x-svc-tier')).toBe('free')
      for (const name of RATE_LIMIT_HEADERS) expect(`${name}: ${response.headers.get(name) ?? 'missing'}`).toMatch(new RegExp(`^${name}: \\d+$`))
    }
  })
})

// From here on, each test has a database of its own and gateways of its own: they run side by side.

describe('several processes on one SQLite file', () => {
  test.concurrent('two gateways under load, with the CLI folding meanwhile: usage equals the responses received, once each', async () => {
    using dir = tempDir()
    const env = { GATEWAY_DB: `${dir.path}/gateway.sqlite` }
    const created = await runCli(['keys', 'create', '--name', 'load', '--tier', 'pro', '--rpm', '1000000', '--tpm', '1000000000', '--json'], env)
    const { key } = JSON.parse(created.stdout) as { key: string }
    const gateways = await Promise.all([spawnGateway(env), spawnGateway(env)])
    let answered = 0
    let words = 0
    let sent = 0
    const total = 3_000
    const load = Promise.all(
      Array.from({ length: 16 }, async (_, worker) => {
        while (sent < total) {
          const n = sent++
          const content = `load ${n} ${'w '.repeat(n % 5)}`.trim()
          const response = await chat(gateways[worker % 2]!.url, key, { body: JSON.stringify({ model: 'local/echo', messages: [{ role: 'user', content }] }) })
          expect(response.status).toBe(200)
          await response.json()
          answered++
          words += content.split(/\s+/).length
        }
      }),
    )
    // The CLI folds every journal while both servers append to theirs: one fold after another,
    // each started once the previous one is done, for as long as the load runs.
    const folds: Promise<unknown>[] = []
    while (sent < total) {
      const fold = runCli(['usage', '--json'], env).then((r) => expect(r.code).toBe(0))
      folds.push(fold)
      await Promise.race([load, fold])
    }
    await Promise.all([load, ...folds])
    await Promise.all(gateways.map((g) => g.stop()))

    const usage = await runCli(['usage', '--json'], env)
    const totals = (JSON.parse(usage.stdout) as { totals: Record<string, number> }).totals
    expect(answered).toBe(total)
    expect(totals).toEqual({
      requests: answered,
      errors: 0,
      prompt_tokens: words,
      completion_tokens: words,
      total_tokens: 2 * words,
      cost_usd: 0,
      cache_saved_usd: 0,
    })
  })
})

describe('several processes starting together', () => {
  test.concurrent('three gateways on a new database: all start, and exactly one first key is made', async () => {
    using dir = tempDir()
    const env = { GATEWAY_DB: `${dir.path}/gateway.sqlite` }
    const gateways = await Promise.all([spawnGateway(env), spawnGateway(env), spawnGateway(env)])
    try {
      // Whichever made the first key prints it just after its listen line.
      const key = await waitFor(() => gateways.find((g) => g.firstKey !== null)?.firstKey, 'one of the three gateways to print a first key')
      for (const g of gateways) expect((await chat(g.url, key)).status).toBe(200)
      const listed = await runCli(['keys', 'list', '--json'], env)
      expect(JSON.parse(listed.stdout)).toHaveLength(1)
    } finally {
      await Promise.all(gateways.map((g) => g.stop()))
    }
    // Stopped, their output is read to the end: only one of them ever printed a key.
    expect(gateways.filter((g) => g.firstKey !== null)).toHaveLength(1)
  })
})

describe('the config file is authoritative', () => {
  const base = (extraAlias: string, extraTier: string) => `
[tiers.main]
requests_per_minute = 1000
tokens_per_minute = 1000000
max_concurrent = 8
${extraTier}
[upstreams.local]
kind = "mock"
[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]
${extraAlias}
`
  const ALIAS = `[aliases."local/extra"]\ntargets = [{ upstream = "local", model = "echo" }]`
  const TIER = `[tiers.side]\nrequests_per_minute = 10\ntokens_per_minute = 1000\nmax_concurrent = 1`

  test.concurrent('an alias the file stopped naming is gone after a reload: not listed, 404', async () => {
    using dir = tempDir()
    const config = writeConfig(dir.path, base(ALIAS, ''))
    const gateway = await spawnGateway(
      { GATEWAY_DB: `${dir.path}/gateway.sqlite`, GATEWAY_CONFIG: config, GATEWAY_ADMIN_KEY: ADMIN_KEY },
      { expectFirstKey: true },
    )
    try {
      const key = gateway.firstKey!
      const extra = JSON.stringify({ model: 'local/extra', messages: [{ role: 'user', content: 'hi' }] })
      expect((await chat(gateway.url, key, { body: extra })).status).toBe(200)
      writeConfig(dir.path, base('', ''))
      const reload = await fetch(`${gateway.url}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}` } })
      expect(reload.status).toBe(200)
      const models = (await (await fetch(`${gateway.url}/v1/models`)).json()) as { data: { id: string }[] }
      expect(models.data.map((m) => m.id)).toEqual(['local/echo'])
      const gone = await chat(gateway.url, key, { body: extra })
      expect(gone.status).toBe(404)
      expect(await gone.json()).toMatchObject({ error: { type: 'not_found_error', code: 'model_not_found' } })
      expect((await fetch(`${gateway.url}/v1/models/local/extra`)).status).toBe(404)
    } finally {
      await gateway.stop()
    }
  })

  test.concurrent('the circuit of a removed target is dropped: the target comes back closed', async () => {
    using dir = tempDir()
    const failing = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => Response.json({ error: { message: 'down' } }, { status: 500 }) })
    const flaky = `[upstreams.flaky]\nkind = "openai"\nbase_url = "http://127.0.0.1:${failing.port}/v1"\nmax_retries = 0\nfailure_threshold = 1\ncooldown_ms = 3600000`
    const alias = `[aliases."flaky/one"]\ntargets = [{ upstream = "flaky", model = "m" }]`
    const config = writeConfig(dir.path, base(`${flaky}\n${alias}`, ''))
    const gateway = await spawnGateway(
      { GATEWAY_DB: `${dir.path}/gateway.sqlite`, GATEWAY_CONFIG: config, GATEWAY_ADMIN_KEY: ADMIN_KEY },
      { expectFirstKey: true },
    )
    const admin = { authorization: `Bearer ${ADMIN_KEY}` }
    const circuit = async () => {
      const { data } = (await (await fetch(`${gateway.url}/admin/aliases`, { headers: admin })).json()) as {
        data: { name: string; targets: { circuit: string }[] }[]
      }
      return data.find((a) => a.name === 'flaky/one')?.targets[0]?.circuit ?? 'absent'
    }
    const reload = async () => expect((await fetch(`${gateway.url}/admin/reload`, { method: 'POST', headers: admin })).status).toBe(200)
    try {
      const body = JSON.stringify({ model: 'flaky/one', messages: [{ role: 'user', content: 'hi' }] })
      expect((await chat(gateway.url, gateway.firstKey!, { body })).status).toBe(502)
      expect(await circuit()).toBe('open')
      writeConfig(dir.path, base('', ''))
      await reload()
      expect(await circuit()).toBe('absent')
      writeConfig(dir.path, base(`${flaky}\n${alias}`, ''))
      await reload()
      expect(await circuit()).toBe('closed')
    } finally {
      await gateway.stop()
      failing.stop(true)
    }
  })

  test.concurrent(
    'removing a tier that keys use: reload refused with 400 naming the tier and the key count, the old config kept; a fresh start is refused too',
    async () => {
      using dir = tempDir()
      const env = { GATEWAY_DB: `${dir.path}/gateway.sqlite`, GATEWAY_CONFIG: writeConfig(dir.path, base(ALIAS, TIER)), GATEWAY_ADMIN_KEY: ADMIN_KEY }
      const gateway = await spawnGateway(env)
      const admin = { authorization: `Bearer ${ADMIN_KEY}` }
      try {
        for (const name of ['one', 'two']) {
          const created = await runCli(['keys', 'create', '--name', name, '--tier', 'side'], env)
          expect(created.code).toBe(0)
        }
        const aliasesBefore = await (await fetch(`${gateway.url}/admin/aliases`, { headers: admin })).json()
        writeConfig(dir.path, base('', ''))
        const reload = await fetch(`${gateway.url}/admin/reload`, { method: 'POST', headers: admin })
        expect(reload.status).toBe(400)
        const { error } = (await reload.json()) as { error: { type: string; code: string; message: string; param: string } }
        expect(error).toMatchObject({ type: 'invalid_request_error', code: 'tier_in_use', param: 'tiers.side' })
        expect(error.message).toContain('tiers."side"')
        expect(error.message).toContain('2 keys use it')
        // Nothing changed: the alias the new file dropped is still there, and so is the tier.
        expect(await (await fetch(`${gateway.url}/admin/aliases`, { headers: admin })).json()).toEqual(aliasesBefore)
        const tiers = (await (await fetch(`${gateway.url}/admin/tiers`, { headers: admin })).json()) as { data: { name: string }[] }
        expect(tiers.data.map((t) => t.name)).toEqual(['main', 'side'])
      } finally {
        await gateway.stop()
      }
      // Awaited, not spawnSync: the tests beside this one keep running meanwhile.
      const { code: exitCode, stderr } = await startRefused(env)
      expect(exitCode).toBe(1)
      expect(stderr).toContain('tiers."side": the file no longer names this tier, but 2 keys use it')
    },
  )
})
