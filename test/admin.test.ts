import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import parse from 'parse-prometheus-text-format'
import { chatBody, inProcessGateway, type InProcessGateway, json, tempDir, writeConfig } from './support/gateway'
import { spawnGateway } from './support/process'
import { waitFor } from './support/wait'
import { setup, teardown, TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

const ADMIN_KEY = 'admin-key-for-tests-0123456789'

describe('admin API: who may call it', () => {
  let enabled: InProcessGateway
  let disabled: InProcessGateway
  let keyId: string
  setup(async () => {
    enabled = await inProcessGateway({ env: { GATEWAY_ADMIN_KEY: ADMIN_KEY } })
    // The 401 matrix sends many wrong keys: from a new address each, so the admin throttle (tested on its own) never answers instead.
    enabled.gateway.clientAddress = () => crypto.randomUUID()
    disabled = await inProcessGateway()
    keyId = (await enabled.gateway.keys.find(enabled.key.slice(0, 12))).id
  })
  teardown(() => {
    enabled.close()
    disabled.close()
  })

  const routes = (): [string, string, unknown?][] => [
    ['GET', '/admin/keys'],
    ['POST', '/admin/keys', { name: 'matrix', tier: 'pro' }],
    ['GET', `/admin/keys/${keyId}`],
    ['PATCH', `/admin/keys/${keyId}`, { name: 'renamed' }],
    ['GET', '/admin/tiers'],
    ['GET', '/admin/upstreams'],
    ['GET', '/admin/aliases'],
    ['GET', '/admin/usage'],
    ['GET', '/admin/usage/series'],
    ['GET', '/admin/config'],
    ['POST', '/admin/reload'],
    ['DELETE', `/admin/keys/${keyId}`],
  ]
  const send = (gw: InProcessGateway, method: string, path: string, body: unknown, headers: Record<string, string>) =>
    gw.request(
      path,
      body === undefined ? { method, headers } : { method, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) },
    )

  test('no key, a caller key, a wrong key: 401 on every admin route', async () => {
    for (const [method, path, body] of routes()) {
      for (const headers of [
        {},
        { authorization: `Bearer ${enabled.key}` },
        { 'x-api-key': enabled.key },
        { authorization: 'Bearer not-the-admin-key-at-all' },
      ] as Record<string, string>[]) {
        const response = await send(enabled, method, path, body, headers)
        expect(`${method} ${path} ${response.status}`).toBe(`${method} ${path} 401`)
        expect(await response.json()).toEqual({ error: { message: 'Unauthorized', type: 'authentication_error', param: null, code: null } })
      }
    }
  })

  test('the admin key (Bearer or x-api-key): 2xx on every admin route', async () => {
    for (const [i, [method, path, body]] of routes().entries()) {
      const headers: Record<string, string> = i % 2 === 0 ? { authorization: `Bearer ${ADMIN_KEY}` } : { 'x-api-key': ADMIN_KEY }
      const response = await send(enabled, method, path, body, headers)
      expect(`${method} ${path} ${response.status}`).toBe(`${method} ${path} ${method === 'POST' && path === '/admin/keys' ? 201 : 200}`)
    }
  })

  test('admin disabled: every admin path is a plain 404', async () => {
    for (const [method, path, body] of routes()) {
      const response = await send(disabled, method, path, body, { authorization: `Bearer ${ADMIN_KEY}` })
      expect(`${method} ${path} ${response.status}`).toBe(`${method} ${path} 404`)
      expect(await response.json()).toMatchObject({ error: { type: 'not_found_error' } })
    }
  })

  test('/dashboard: the login page and its assets are served when admin is on, 404 when off', async () => {
    for (const path of ['/dashboard', '/dashboard/assets/dashboard.js', '/dashboard/assets/uPlot.iife.min.js', '/dashboard/assets/uPlot.min.css']) {
      expect(`${path} ${(await enabled.request(path)).status}`).toBe(`${path} 200`)
      expect(`${path} ${(await disabled.request(path)).status}`).toBe(`${path} 404`)
    }
    const page = await enabled.request('/dashboard')
    expect(page.headers.get('content-type')).toContain('text/html')
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'")
    expect(await page.text()).not.toMatch(/https?:\/\//)
  })

  test('the admin key never works as a caller key', async () => {
    const response = await enabled.request('/v1/chat/completions', json(chatBody(), { authorization: `Bearer ${ADMIN_KEY}` }))
    expect(response.status).toBe(401)
  })

  test('admin routes are in the OpenAPI document under their own tag, with the admin auth scheme', async () => {
    const doc = (await (await enabled.request('/swagger/json')).json()) as { paths: Record<string, Record<string, { tags: string[]; security: unknown }>> }
    const adminPaths = Object.keys(doc.paths).filter((p) => p.startsWith('/admin'))
    expect(adminPaths.sort()).toEqual([
      '/admin/aliases',
      '/admin/config',
      '/admin/keys',
      '/admin/keys/{id}',
      '/admin/reload',
      '/admin/requests',
      '/admin/requests/{id}',
      '/admin/tiers',
      '/admin/upstreams',
      '/admin/usage',
      '/admin/usage/series',
    ])
    for (const path of adminPaths) {
      for (const operation of Object.values(doc.paths[path]!)) {
        expect(operation.tags).toEqual(['Admin'])
        expect(operation.security).toEqual([{ adminBearer: [] }, { adminApiKey: [] }])
      }
    }
  })

  test('read-only views: tiers, upstreams without secrets, aliases with circuit state', async () => {
    const get = async (path: string) =>
      (await (await enabled.request(path, { headers: { 'x-api-key': ADMIN_KEY } })).json()) as { data: Record<string, unknown>[] }
    expect((await get('/admin/tiers')).data.map((t) => t.name)).toEqual(['free', 'standard', 'pro'])
    const upstreams = (await get('/admin/upstreams')).data
    expect(upstreams.find((u) => u.name === 'openai')).toMatchObject({ kind: 'openai', api_key_env: 'OPENAI_API_KEY', api_key_set: false })
    const aliases = (await get('/admin/aliases')).data
    expect(aliases.find((a) => a.name === 'local/echo')).toEqual({
      name: 'local/echo',
      strategy: 'fallback',
      targets: [{ upstream: 'local', model: 'echo', weight: 1, circuit: 'closed' }],
    })
  })

  test('bad admin input: 400 naming the field; unknown key: 404', async () => {
    const headers = { authorization: `Bearer ${ADMIN_KEY}` }
    const unknownTier = await send(enabled, 'POST', '/admin/keys', { name: 'x', tier: 'platinum' }, headers)
    expect(unknownTier.status).toBe(400)
    expect(await unknownTier.json()).toMatchObject({ error: { type: 'invalid_request_error', param: 'tier' } })
    const badField = await send(enabled, 'POST', '/admin/keys', { name: 'x', tier: 'pro', rpm: 0 }, headers)
    expect(badField.status).toBe(400)
    expect(await badField.json()).toMatchObject({ error: { param: 'rpm' } })
    const unknownField = await send(enabled, 'POST', '/admin/keys', { name: 'x', tier: 'pro', colour: 'red' }, headers)
    expect(unknownField.status).toBe(400)
    expect((await send(enabled, 'GET', '/admin/keys/key_nope', undefined, headers)).status).toBe(404)
  })
})

describe('operating the real server', () => {
  const dir = tempDir()
  const configPath = `${dir.path}/gateway.toml`
  const config = (echoUpstream: string, extra = '') => `
[tiers.basic]
requests_per_minute = 1000000
tokens_per_minute = 100000000
max_concurrent = 50

[tiers.tiny]
requests_per_minute = 5
tokens_per_minute = 1000000
max_concurrent = 50

[upstreams.first]
kind = "mock"

[upstreams.second]
kind = "mock"

[aliases."team/echo"]
targets = [{ upstream = "${echoUpstream}", model = "echo" }]
${extra}`
  let gateway: Awaited<ReturnType<typeof spawnGateway>>
  const admin = (method: string, path: string, body?: unknown) =>
    fetch(`${gateway.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  const chat = (key: string, content = 'hello there', headers: Record<string, string> = {}) =>
    fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
      body: JSON.stringify({ model: 'team/echo', messages: [{ role: 'user', content }] }),
    })

  setup(async () => {
    writeConfig(dir.path, config('first'))
    gateway = await spawnGateway({ GATEWAY_DB: `${dir.path}/gateway.sqlite`, GATEWAY_CONFIG: configPath, GATEWAY_ADMIN_KEY: ADMIN_KEY })
  })
  teardown(async () => {
    await gateway?.stop()
    dir[Symbol.dispose]()
  })

  test('key lifecycle: create, use, change tier, revoke: 401 within a second', async () => {
    const created = await admin('POST', '/admin/keys', { name: 'ops', tier: 'basic', expires_in_days: 30 })
    expect(created.status).toBe(201)
    const record = (await created.json()) as { id: string; key: string; prefix: string; tier: string; expires_at: string }
    expect(record.key).toMatch(/^sk-cg-[A-Za-z0-9]{40}$/)
    expect(record.prefix).toBe(record.key.slice(0, 12))
    expect(record.expires_at).not.toBeNull()

    const used = await chat(record.key)
    expect(used.status).toBe(200)
    expect(used.headers.get('x-svc-tier')).toBe('basic')

    const listed = (await (await admin('GET', '/admin/keys')).json()) as { data: Record<string, unknown>[] }
    expect(JSON.stringify(listed)).not.toContain(record.key)
    expect(listed.data.map((k) => k.id)).toContain(record.id)

    const patched = await admin('PATCH', `/admin/keys/${record.id}`, { tier: 'tiny', rpm: null })
    expect(patched.status).toBe(200)
    expect(await patched.json()).toMatchObject({ id: record.id, tier: 'tiny' })
    const retiered = await chat(record.key)
    expect(retiered.headers.get('x-svc-tier')).toBe('tiny')
    expect(retiered.headers.get('x-ratelimit-limit')).toBe('5')

    const revoked = await admin('DELETE', `/admin/keys/${record.id}`)
    expect(((await revoked.json()) as { revoked_at: string | null }).revoked_at).not.toBeNull()
    // Revoked through this process: refused on the very next request.
    expect((await chat(record.key)).status).toBe(401)

    const usage = (await (await admin('GET', `/admin/usage?key_id=${record.id}`)).json()) as { totals: { requests: number }; data: { key_prefix: string }[] }
    expect(usage.totals.requests).toBe(2)
    expect(usage.data[0]!.key_prefix).toBe(record.prefix)
  })

  test('reload swaps routing under load with zero failed requests; a broken file is refused and routing stays', async () => {
    const key = ((await (await admin('POST', '/admin/keys', { name: 'load', tier: 'basic' })).json()) as { key: string }).key
    const upstreams: string[] = []
    const failures: number[] = []
    let running = true
    const worker = async () => {
      while (running) {
        const response = await chat(key)
        if (response.status !== 200) failures.push(response.status)
        else upstreams.push(response.headers.get('x-svc-upstream')!)
        await response.arrayBuffer()
      }
    }
    const workers = Array.from({ length: 4 }, worker)
    await waitFor(() => upstreams.length >= 10, 'traffic on the first routing')
    writeFileSync(configPath, config('second'))
    const reloaded = await admin('POST', '/admin/reload')
    expect(reloaded.status).toBe(200)
    expect(await reloaded.json()).toMatchObject({ ok: true, source: configPath, aliases: 1 })
    await waitFor(() => upstreams.filter((u) => u === 'second').length >= 10, 'traffic on the reloaded routing')
    running = false
    await Promise.all(workers)
    expect(failures).toEqual([])
    expect(upstreams.length).toBeGreaterThan(20)
    expect(upstreams[0]).toBe('first')
    expect(upstreams.at(-1)).toBe('second')
    // Once swapped, never back.
    expect(upstreams.slice(upstreams.indexOf('second'))).not.toContain('first')

    writeFileSync(configPath, `${config('first')}\n[tiers.basic]\nrequests_per_minute = "lots"\n`)
    const broken = await admin('POST', '/admin/reload')
    expect(broken.status).toBe(400)
    writeFileSync(configPath, config('first').replace('max_concurrent = 50', 'max_concurrent = 0'))
    const invalid = await admin('POST', '/admin/reload')
    expect(invalid.status).toBe(400)
    expect(await invalid.json()).toMatchObject({ error: { type: 'invalid_request_error', param: 'tiers.basic.max_concurrent' } })
    expect((await chat(key)).headers.get('x-svc-upstream')).toBe('second')

    // SIGHUP does the same as POST /admin/reload.
    writeFileSync(configPath, config('first'))
    gateway.proc.kill('SIGHUP')
    await waitFor(async () => (await chat(key)).headers.get('x-svc-upstream') === 'first', 'SIGHUP to switch routing back to the first upstream')
  })

  test('one JSON log line per request with its fields, and never a key or message content', async () => {
    const key = ((await (await admin('POST', '/admin/keys', { name: 'logs', tier: 'basic' })).json()) as { key: string }).key
    const response = await chat(key, 'TOP-SECRET-CONTENT words', { 'x-request-id': 'log-line-test-1' })
    expect(response.status).toBe(200)
    await response.text()
    const line = await waitFor(
      () =>
        gateway
          .output()
          .split('\n')
          .filter((l) => l.includes('"log-line-test-1"'))
          .map((l) => JSON.parse(l) as Record<string, unknown>)[0],
      'the request log line',
    )
    expect(line).toMatchObject({
      level: 'info',
      msg: 'request',
      request_id: 'log-line-test-1',
      method: 'POST',
      path: '/v1/chat/completions',
      status: 200,
      key_prefix: key.slice(0, 12),
      tier: 'basic',
      alias: 'team/echo',
      upstream: 'first',
      upstream_model: 'echo',
      attempts: 1,
      prompt_tokens: 2,
      completion_tokens: 2,
    })
    expect(typeof line!.latency_ms).toBe('number')
    expect(line).toHaveProperty('ttfb_ms')
    const all = gateway.output()
    expect(all).not.toContain(key)
    expect(all).not.toContain(ADMIN_KEY)
    expect(all).not.toContain('TOP-SECRET-CONTENT')
    const startup = all
      .split('\n')
      .filter((l) => l.includes('listening on'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)[0]
    expect(startup).toMatchObject({ version: expect.any(String), port: expect.any(Number), database: `${dir.path}/gateway.sqlite`, config: configPath })
  })
})

describe('message content in logs', () => {
  test('is logged only with LOG_LEVEL=debug and GATEWAY_LOG_BODIES=1', async () => {
    using dir = tempDir()
    const gateway = await spawnGateway({ GATEWAY_DB: `${dir.path}/gateway.sqlite`, LOG_LEVEL: 'debug', GATEWAY_LOG_BODIES: '1' }, { expectFirstKey: true })
    try {
      const response = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${gateway.firstKey}` },
        body: JSON.stringify({ model: 'local/echo', messages: [{ role: 'user', content: 'VISIBLE-IN-DEBUG' }] }),
      })
      await response.text()
      await waitFor(() => gateway.output().includes('VISIBLE-IN-DEBUG'), 'the debug log of the message content')
    } finally {
      await gateway.stop()
    }
  })
})

describe('/metrics', () => {
  test('Prometheus text that a real parser reads, with counters matching the requests sent', async () => {
    using dir = tempDir()
    const config = writeConfig(
      dir.path,
      `
[tiers.t]
requests_per_minute = 3
tokens_per_minute = 1000000
max_concurrent = 10

[upstreams.local]
kind = "mock"

[upstreams.dead]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
max_retries = 1

[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]

[aliases."dead/x"]
targets = [{ upstream = "dead", model = "d" }, { upstream = "local", model = "echo" }]
`,
    )
    const gw = await inProcessGateway({ env: { GATEWAY_CONFIG: config } })
    try {
      const auth = { authorization: `Bearer ${gw.key}` }
      for (let i = 0; i < 2; i++) expect((await gw.request('/v1/chat/completions', json(chatBody('one two three'), auth))).status).toBe(200)
      const stream = await gw.request('/v1/chat/completions', json(chatBody('x', { model: 'dead/x', stream: true }), auth))
      expect(stream.status).toBe(200)
      expect(await stream.text()).toEndWith('data: [DONE]\n\n')
      expect((await gw.request('/v1/chat/completions', json(chatBody(), auth))).status).toBe(429)

      const response = await gw.request('/metrics')
      expect(response.status).toBe(200)
      expect(response.headers.get('content-type')).toContain('text/plain')
      const text = await response.text()
      const families = new Map(parse(text).map((f) => [f.name, f]))
      const value = (name: string, labels: Record<string, string>) =>
        Number(families.get(name)?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))?.value ?? NaN)

      expect(value('chatgate_requests_total', { alias: 'local/echo', upstream: 'local', status: '2xx' })).toBe(2)
      expect(value('chatgate_requests_total', { alias: 'dead/x', upstream: 'local', status: '2xx' })).toBe(1)
      expect(value('chatgate_requests_total', { alias: 'local/echo', upstream: '', status: '4xx' })).toBe(1)
      expect(value('chatgate_tokens_total', { alias: 'local/echo', direction: 'prompt' })).toBe(6)
      expect(value('chatgate_tokens_total', { alias: 'local/echo', direction: 'completion' })).toBe(6)
      expect(value('chatgate_ratelimit_refusals_total', { reason: 'requests' })).toBe(1)
      expect(value('chatgate_upstream_attempts_total', { upstream: 'dead', outcome: 'upstream_connection_error' })).toBe(2)
      expect(value('chatgate_upstream_attempts_total', { upstream: 'local', outcome: 'success' })).toBe(3)
      expect(value('chatgate_retries_total', { upstream: 'dead' })).toBe(1)
      expect(value('chatgate_fallbacks_total', { alias: 'dead/x' })).toBe(1)
      expect(value('chatgate_in_flight_requests', {})).toBe(0)
      expect(value('chatgate_circuit_state', { upstream: 'dead', model: 'd' })).toBe(0)
      for (const name of [
        'chatgate_request_duration_seconds',
        'chatgate_gateway_overhead_seconds',
        'chatgate_upstream_duration_seconds',
        'chatgate_ttfb_seconds',
      ]) {
        expect(families.get(name)?.type).toBe('HISTOGRAM')
      }
      // The text parser drops labels of histogram series; the registry's own samples keep them.
      const samples = gw.gateway.metrics.samples()
      const histogramCount = (name: string, labels: Record<string, string>) =>
        samples.find((s) => s.name === `${name}_count` && Object.entries(labels).every(([k, l]) => s.labels[k] === l))?.value
      expect(histogramCount('chatgate_request_duration_seconds', { alias: 'local/echo' })).toBe(3)
      expect(histogramCount('chatgate_gateway_overhead_seconds', {})).toBe(2)
      expect(histogramCount('chatgate_ttfb_seconds', { alias: 'dead/x' })).toBe(1)
      expect(histogramCount('chatgate_upstream_duration_seconds', { upstream: 'local' })).toBe(3)
      // The text carries the same series, cumulative buckets ending in +Inf.
      expect(text).toContain('chatgate_request_duration_seconds_count{alias="local/echo"} 3\n')
      expect(text).toContain('chatgate_request_duration_seconds_bucket{alias="local/echo",le="+Inf"} 3\n')
      expect(text).toContain('chatgate_upstream_duration_seconds_count{upstream="local"} 3\n')
    } finally {
      gw.close()
    }
  })

  test('GATEWAY_METRICS_KEY protects it', async () => {
    const gw = await inProcessGateway({ env: { GATEWAY_METRICS_KEY: 'metrics-key-0123456789' } })
    try {
      expect((await gw.request('/metrics')).status).toBe(401)
      expect((await gw.request('/metrics', { headers: { authorization: 'Bearer metrics-key-0123456789' } })).status).toBe(200)
    } finally {
      gw.close()
    }
  })
})
