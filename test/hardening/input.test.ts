/**
 * One test per finding of the adversarial audit fixed in "Hardening: bounds on hostile input and
 * hostile upstreams", each driven through the real server (`bun src/main.ts`) and, where an
 * upstream is needed, a real fake upstream on 127.0.0.1. Raw TCP (node:net) where fetch cannot
 * express the request: a short or invalid Host header, a NUL byte in the path, huge headers.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { connect } from 'node:net'
import { ROOT, tempDir, writeConfig } from '../support/gateway'
import { type GatewayProcess, runCli, spawnGateway } from '../support/process'
import { fakeUpstream, openaiCompletion } from '../support/upstream'
import { WAIT_MS, waitFor } from '../support/wait'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

const ADMIN_KEY = 'admin-key-for-tests-0123456789'
const ADMIN = { authorization: `Bearer ${ADMIN_KEY}` }
const MB = 1024 * 1024

/** One tier with room for every test's traffic (it is the first, so the first key gets it), the offline mock, and optionally a fake OpenAI upstream. */
function config(upstreamUrl?: string): string {
  const fake = upstreamUrl
    ? `
[upstreams.fake]
kind = "openai"
base_url = "${upstreamUrl}"
max_retries = 0

[aliases."fake/one"]
targets = [{ upstream = "fake", model = "upstream-model" }]
`
    : ''
  return `
[tiers.pro]
requests_per_minute = 1000000
tokens_per_minute = 1000000000
max_concurrent = 64

[upstreams.local]
kind = "mock"

[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]
${fake}`
}

/** A gateway on its own database and config; stopped (and its directory removed) on dispose. */
async function gatewayFor(options: { env?: Record<string, string>; upstreamUrl?: string } = {}) {
  const dir = tempDir('chatgate-hardening-')
  const db = `${dir.path}/gateway.sqlite`
  const env = { GATEWAY_DB: db, GATEWAY_CONFIG: writeConfig(dir.path, config(options.upstreamUrl)), GATEWAY_ADMIN_KEY: ADMIN_KEY, ...options.env }
  const gateway = await spawnGateway(env, { expectFirstKey: true })
  return {
    gateway,
    env,
    db,
    dir: dir.path,
    key: gateway.firstKey!,
    async [Symbol.asyncDispose]() {
      if (gateway.proc.exitCode === null && gateway.proc.signalCode === null) await gateway.stop()
      dir[Symbol.dispose]()
    },
  }
}

const post = (url: string, key: string, body: string, method = 'POST') =>
  fetch(url, { method, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body })

interface ErrorBody {
  error: { message: string; type: string; code?: string; param?: string }
}

/** The body must be the gateway's JSON error; returns it. */
async function errorOf(response: Response): Promise<ErrorBody['error']> {
  const text = await response.text()
  expect(response.headers.get('content-type') ?? '').toContain('application/json')
  const body = JSON.parse(text) as ErrorBody
  expect(typeof body.error.message).toBe('string')
  expect(typeof body.error.type).toBe('string')
  return body.error
}

const procStatusMb = (pid: number, field: 'VmRSS' | 'VmHWM') =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024

/** Waits until `check` holds, naming it by its source if it never does. */
const eventually = (check: () => boolean): Promise<true> => waitFor(check, () => `${check}`)

interface RawResponse {
  status: number
  headers: Map<string, string>
  body: string
  /** Everything the server sent. */
  raw: string
}

/**
 * Sends `request` as is over a new TCP connection and reads until the server closes it (requests
 * carry `Connection: close`), with a deadline. A server that answers and closes before reading all
 * of a large request can reset the connection: what arrived before the reset is the answer. The
 * deadline is a safety net (WAIT_MS), not a bound the answer is expected to come close to.
 */
function rawRequest(url: string, request: string | Buffer, ms = WAIT_MS): Promise<RawResponse> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    const socket = connect(Number(port), hostname)
    const done = () => {
      clearTimeout(timer)
      const raw = Buffer.concat(chunks).toString('latin1')
      const split = raw.indexOf('\r\n\r\n')
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? NaN)
      if (split === -1 || Number.isNaN(status)) return reject(new Error(`no HTTP answer: ${JSON.stringify(raw.slice(0, 200))}`))
      const headers = new Map<string, string>()
      for (const line of raw.slice(0, split).split('\r\n').slice(1)) {
        const colon = line.indexOf(':')
        headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim())
      }
      let body = Buffer.from(raw.slice(split + 4), 'latin1')
      if (headers.get('transfer-encoding') === 'chunked') {
        const parts: Buffer[] = []
        for (let at = 0; ;) {
          const eol = body.indexOf('\r\n', at)
          const size = parseInt(body.subarray(at, eol).toString('latin1'), 16)
          if (!(size > 0)) break
          parts.push(body.subarray(eol + 2, eol + 2 + size))
          at = eol + 2 + size + 2
        }
        body = Buffer.concat(parts)
      }
      resolve({ status, headers, body: body.toString('utf8'), raw })
    }
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no close within ${ms} ms; got ${JSON.stringify(Buffer.concat(chunks).toString('latin1').slice(0, 200))}`))
    }, ms)
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', () => {}) // ECONNRESET after an early answer: 'close' follows and reads what came
    socket.on('close', done)
    socket.write(request)
  })
}

const rawError = (response: RawResponse): ErrorBody['error'] => {
  expect(response.headers.get('content-type') ?? '').toContain('application/json')
  return (JSON.parse(response.body) as ErrorBody).error
}

/** Log lines (JSON) of a gateway's output; the last may still be arriving, and is skipped until whole. */
function logLines(gateway: GatewayProcess): Record<string, unknown>[] {
  const lines: Record<string, unknown>[] = []
  for (const line of gateway.output().split('\n')) {
    if (!line.startsWith('{')) continue
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>)
    } catch {
      // a line cut between two reads of the pipe
    }
  }
  return lines
}

// Each test starts gateways of its own, on databases of their own: they run side by side.
describe.concurrent('hardening: hostile input', () => {
  test('JSON nested 10,000 deep is refused (400 json_too_deep) before any parse, on chat and admin routes, with flat memory; depth 64 is accepted and 65 refused; the process is in production mode whatever NODE_ENV says (asset names like constructor are JSON 404s without paths)', async () => {
    const deep = `{"model":"local/echo","messages":[{"role":"user","content":"x"}],"x":${'['.repeat(10_000)}${']'.repeat(10_000)}}`
    const nested = (depth: number) => `{"model":"local/echo","messages":[{"role":"user","content":"x"}],"x":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`
    expect(deep.length).toBeGreaterThan(20_000)

    for (const nodeEnv of [null, 'development']) {
      await using gw = await gatewayFor({ env: nodeEnv === null ? {} : { NODE_ENV: nodeEnv } })
      const { gateway, key } = gw
      const label = `NODE_ENV=${nodeEnv ?? '(unset)'}`
      const keys = (await (await fetch(`${gateway.url}/admin/keys`, { headers: ADMIN })).json()) as { data: { id: string }[] }
      const id = keys.data[0]!.id
      const targets: [string, string, string][] = [
        ['POST', '/v1/chat/completions', key],
        ['POST', '/admin/keys', ADMIN_KEY],
        ['PATCH', `/admin/keys/${id}`, ADMIN_KEY],
      ]
      // Warm each route with an ordinary refusal, so first-use allocations are not counted.
      for (const [method, path, auth] of targets) await (await post(`${gateway.url}${path}`, auth, '{"x":1', method)).arrayBuffer()

      const rssBefore = procStatusMb(gateway.proc.pid, 'VmRSS')
      const answers: { request: string; status: number; text: string }[] = []
      for (let round = 0; round < 4; round++) {
        for (const [method, path, auth] of targets) {
          const response = await post(`${gateway.url}${path}`, auth, deep, method)
          answers.push({ request: `${label} ${method} ${path}`, status: response.status, text: await response.text() })
        }
      }
      // The peak (VmHWM) since start, against the resident size before: a parse of the body, or a
      // validation error that serializes it, costs hundreds of MB; the depth check costs nothing.
      const peakGrowth = procStatusMb(gateway.proc.pid, 'VmHWM') - rssBefore
      const rssGrowth = procStatusMb(gateway.proc.pid, 'VmRSS') - rssBefore
      expect(peakGrowth).toBeLessThan(150)
      expect(rssGrowth).toBeLessThan(64)
      expect(answers).toHaveLength(12)
      for (const { request, status, text } of answers) {
        expect(`${request}: ${status}`).toBe(`${request}: 400`)
        expect(JSON.parse(text)).toMatchObject({ error: { type: 'invalid_request_error', code: 'json_too_deep' } })
      }

      // The default limit, GATEWAY_MAX_JSON_DEPTH=64: 64 levels pass, 65 do not.
      const at64 = await post(`${gateway.url}/v1/chat/completions`, key, nested(64))
      expect(at64.status).toBe(200)
      await at64.arrayBuffer()
      const at65 = await post(`${gateway.url}/v1/chat/completions`, key, nested(65))
      expect(at65.status).toBe(400)
      expect(await errorOf(at65)).toMatchObject({ type: 'invalid_request_error', code: 'json_too_deep' })
      const admin65 = await post(`${gateway.url}/admin/keys`, ADMIN_KEY, `{"name":"n","tier":"pro","x":${'['.repeat(64)}${']'.repeat(64)}}`)
      expect(admin65.status).toBe(400)
      expect((await errorOf(admin65)).code).toBe('json_too_deep')

      // Production mode: names that exist on every object are not assets, and nothing shows a path.
      for (const path of [
        '/swagger/assets/constructor',
        '/swagger/assets/__proto__',
        '/dashboard/assets/constructor',
        '/dashboard/assets/__proto__',
        '/dashboard/assets/toString',
        '/dashboard/assets/hasOwnProperty',
      ]) {
        const response = await fetch(`${gateway.url}${path}`)
        const text = await response.text()
        expect(`${label} ${path}: ${response.status}`).toBe(`${label} ${path}: 404`)
        expect(text).not.toContain(ROOT)
        expect(text).not.toContain('node_modules')
        expect(JSON.parse(text)).toMatchObject({ error: { type: 'not_found_error' } })
        expect(typeof (JSON.parse(text) as ErrorBody).error.message).toBe('string')
      }
    }
  })

  test('a short Host header does not shift the route: GET /zzz/admin/keys with "Host: x" is a 404 logged as /zzz/admin/keys; an invalid Host gets 400 invalid_host', async () => {
    await using gw = await gatewayFor()
    const { gateway } = gw
    const request = (path: string, host: string) => `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${ADMIN_KEY}\r\nConnection: close\r\n\r\n`

    const shifted = await rawRequest(gateway.url, request('/zzz/admin/keys', 'x'))
    expect(shifted.status).toBe(404)
    expect(rawError(shifted).type).toBe('not_found_error')
    expect(shifted.body).not.toContain('"data"')
    const logged = await eventually(() => logLines(gateway).some((line) => line.path === '/zzz/admin/keys' && line.status === 404))
    expect(logged ? 'logged as /zzz/admin/keys' : gateway.output().slice(-2000)).toBe('logged as /zzz/admin/keys')
    expect(logLines(gateway).some((line) => line.path === '/admin/keys')).toBe(false)

    // The real path still works with a one-letter Host.
    const real = await rawRequest(gateway.url, request('/admin/keys', 'x'))
    expect(real.status).toBe(200)
    expect(JSON.parse(real.body)).toHaveProperty('data')

    for (const host of ['a b', 'ex_ample/../x']) {
      const refused = await rawRequest(gateway.url, request('/health', host))
      expect(`${host}: ${refused.status}`).toBe(`${host}: 400`)
      expect(rawError(refused)).toMatchObject({ type: 'invalid_request_error', code: 'invalid_host' })
    }
    // Names real deployments use: Docker Compose services with underscores, fully qualified names with a dot at the end, IPv6.
    for (const host of ['chat_gate:8080', 'example.com.', '[::1]:8080', 'localhost']) {
      const served = await rawRequest(gateway.url, request('/health', host))
      expect(`${host}: ${served.status}`).toBe(`${host}: 200`)
    }
  })

  test('out-of-range key numbers are refused before any write: expires_in_days 100000000 is a 400 naming it (API and CLI), nothing is stored and listing still works; rpm over 1e12 is a 400', async () => {
    await using gw = await gatewayFor()
    const { gateway, env } = gw
    const list = async () => {
      const response = await fetch(`${gateway.url}/admin/keys`, { headers: ADMIN })
      expect(response.status).toBe(200)
      return ((await response.json()) as { data: { id: string; name: string; rpm: number | null }[] }).data
    }
    const before = await list()
    expect(before).toHaveLength(1)

    const created = await post(`${gateway.url}/admin/keys`, ADMIN_KEY, JSON.stringify({ name: 'forever', tier: 'pro', expires_in_days: 100_000_000 }))
    expect(created.status).toBe(400)
    const error = await errorOf(created)
    expect(error.type).toBe('invalid_request_error')
    expect(`${error.param ?? ''} ${error.message}`).toContain('expires_in_days')
    expect(await list()).toEqual(before)

    const cli = await runCli(['keys', 'create', '--name', 'x', '--tier', 'pro', '--expires-in-days', '100000000'], env)
    expect(cli.code).not.toBe(0)
    expect(cli.stderr.trim()).not.toContain('\n')
    expect(cli.stderr).toContain('expires-in-days')
    expect(cli.stdout).not.toMatch(/sk-cg-/)
    expect(await list()).toEqual(before)
    const listed = await runCli(['keys', 'list', '--json'], env)
    expect(listed.code).toBe(0)
    expect(JSON.parse(listed.stdout)).toHaveLength(1)

    const id = before[0]!.id
    const patched = await post(`${gateway.url}/admin/keys/${id}`, ADMIN_KEY, JSON.stringify({ rpm: 1_000_000_000_001 }), 'PATCH')
    expect(patched.status).toBe(400)
    expect(`${(await errorOf(patched)).message}`).toContain('rpm')
    expect((await list())[0]!.rpm).toBeNull()
    // The bound itself is accepted.
    const atBound = await post(`${gateway.url}/admin/keys/${id}`, ADMIN_KEY, JSON.stringify({ rpm: 1_000_000_000_000 }), 'PATCH')
    expect(atBound.status).toBe(200)
  })

  test('the model swap edits only the top-level member: the upstream gets the caller text byte for byte but for that value; duplicate top-level "model" keys (also escaped) are a 400 duplicate_key and reach no upstream', async () => {
    const upstream = fakeUpstream((req) => openaiCompletion(String(req.body.model), 'fine'))
    try {
      await using gw = await gatewayFor({ upstreamUrl: upstream.url })
      const { gateway, key } = gw
      const body = (model: string) =>
        `{\n  "model" :  ${model} ,\n  "metadata": {"model":"fake/one", "note": "keep  me"},\n` +
        `  "messages": [ {"role": "user", "content": "quote \\"model\\":\\"fake/one\\" as is"} ],\n  "temperature":   0.5\n}`
      const sent = body('"fake/one"')
      const response = await post(`${gateway.url}/v1/chat/completions`, key, sent)
      expect(response.status).toBe(200)
      expect(((await response.json()) as { model: string }).model).toBe('fake/one')
      expect(upstream.requests).toHaveLength(1)
      expect(upstream.requests[0]!.text).toBe(body('"upstream-model"'))

      const duplicates = [
        '{"model":"fake/one","messages":[{"role":"user","content":"hi"}],"model":"fake/one"}',
        '{"model":"local/echo","messages":[{"role":"user","content":"hi"}],"mo\\u0064el":"fake/one"}',
      ]
      for (const duplicate of duplicates) {
        const refused = await post(`${gateway.url}/v1/chat/completions`, key, duplicate)
        expect(`${duplicate}: ${refused.status}`).toBe(`${duplicate}: 400`)
        expect(await errorOf(refused)).toMatchObject({ type: 'invalid_request_error', code: 'duplicate_key', param: 'model' })
      }
      expect(upstream.requests).toHaveLength(1)
    } finally {
      upstream.stop()
    }
  })

  test('errors are JSON: bad percent-encoding is a 400 invalid_path, a 20 MiB body a JSON 413; Bun itself answers ~100 KB of headers with an empty 431 and a NUL in the path with an empty 505', async () => {
    await using gw = await gatewayFor()
    const { gateway, key } = gw
    for (const path of ['/v1/models/%', '/v1/models/%E0%A4%A']) {
      const response = await fetch(`${gateway.url}${path}`)
      expect(`${path}: ${response.status}`).toBe(`${path}: 400`)
      expect(await errorOf(response)).toMatchObject({ type: 'invalid_request_error', code: 'invalid_path' })
    }

    const large = await post(`${gateway.url}/v1/chat/completions`, key, `{"model":"local/echo","x":"${'x'.repeat(20 * MB)}"}`)
    expect(large.status).toBe(413)
    expect(await errorOf(large)).toMatchObject({ type: 'invalid_request_error' })

    // Bun's own answers, before the gateway sees the request: documented here, not the gateway's.
    const headers = await rawRequest(gateway.url, `GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Large: ${'a'.repeat(100_000)}\r\nConnection: close\r\n\r\n`)
    expect(headers.status).toBe(431)
    expect(headers.body).toBe('')
    const nul = await rawRequest(gateway.url, Buffer.from(`GET /he\0alth HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`, 'latin1'))
    expect(nul.status).toBe(505)
    expect(nul.body).toBe('')
    // The gateway is still up.
    expect((await fetch(`${gateway.url}/health`)).status).toBe(200)
  })

  test('headers and files: pages carry CSP, frame denial and nosniff; every admin answer is no-store; database, WAL, SHM and usage journals are 0600; 2,000 401s log a few summary lines whose counts add up to 2,000', async () => {
    {
      await using gw = await gatewayFor()
      const { gateway, key, db, dir } = gw
      for (const path of ['/swagger', '/dashboard']) {
        const response = await fetch(`${gateway.url}${path}`)
        await response.arrayBuffer()
        expect(`${path}: ${response.status}`).toBe(`${path}: 200`)
        expect(response.headers.get('content-security-policy') ?? '').toContain("frame-ancestors 'none'")
        expect(response.headers.get('x-frame-options')).toBe('DENY')
        expect(response.headers.get('x-content-type-options')).toBe('nosniff')
      }

      const listed = await fetch(`${gateway.url}/admin/keys`, { headers: ADMIN })
      expect(listed.status).toBe(200)
      await listed.arrayBuffer()
      const created = await post(`${gateway.url}/admin/keys`, ADMIN_KEY, JSON.stringify({ name: 'shown-once', tier: 'pro' }))
      expect(created.status).toBe(201)
      expect(((await created.json()) as { key: string }).key).toMatch(/^sk-cg-/)
      const refused = await fetch(`${gateway.url}/admin/keys`, { headers: { authorization: 'Bearer not-the-admin-key' } })
      expect(refused.status).toBe(401)
      await refused.arrayBuffer()
      for (const [name, response] of [
        ['GET 200', listed],
        ['POST 201', created],
        ['GET 401', refused],
      ] as const) {
        expect(`${name}: ${response.headers.get('cache-control')}`).toBe(`${name}: no-store`)
      }

      // Some traffic, so the WAL, the shared memory and the usage journal all exist and were written.
      for (let i = 0; i < 20; i++) {
        const response = await post(
          `${gateway.url}/v1/chat/completions`,
          key,
          JSON.stringify({ model: 'local/echo', messages: [{ role: 'user', content: `hi ${i}` }] }),
        )
        expect(response.status).toBe(200)
        await response.arrayBuffer()
      }
      const journals = () => readdirSync(dir).filter((name) => name.startsWith('gateway.sqlite.usage-') && name.endsWith('.log'))
      const files = () => [db, `${db}-wal`, `${db}-shm`, ...journals().map((name) => `${dir}/${name}`)]
      expect(await eventually(() => journals().length > 0 && files().every((file) => statSync(file, { throwIfNoEntry: false }) !== undefined))).toBe(true)
      const journalHasEntries = await eventually(() => journals().some((name) => statSync(`${dir}/${name}`).size > 0))
      expect(journalHasEntries).toBe(true)
      for (const file of files())
        expect(`${file.slice(dir.length + 1)}: ${(statSync(file).mode & 0o777).toString(8)}`).toBe(`${file.slice(dir.length + 1)}: 600`)
    }

    await using flood = await gatewayFor()
    const { gateway } = flood
    const total = 2_000
    let sent = 0
    const statuses = new Map<number, number>()
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (sent < total) {
          sent++
          const made = `sk-cg-${crypto.randomUUID().replaceAll('-', '')}${'x'.repeat(8)}`
          const response = await post(`${gateway.url}/v1/chat/completions`, made, '{"model":"local/echo","messages":[{"role":"user","content":"x"}]}')
          await response.arrayBuffer()
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
        }
      }),
    )
    expect(statuses).toEqual(new Map([[401, total]]))
    const summed = () =>
      logLines(gateway)
        .filter((line) => line.msg === 'requests refused' && line.status === 401)
        .reduce((sum, line) => sum + Number(line.count), 0)
    // The summary is written within about a second, while the gateway runs.
    const summarized = await eventually(() => summed() === total)
    expect(summarized ? total : `${summed()} summarized; output tail: ${gateway.output().slice(-1500)}`).toBe(total)

    // At stop every pending summary is written: then count every line about a 401.
    expect(await gateway.stop('SIGTERM')).toBe(0)
    expect(await eventually(() => logLines(gateway).some((line) => line.msg === 'stopped'))).toBe(true)
    const about401 = logLines(gateway).filter((line) => line.status === 401)
    expect(about401.length).toBeGreaterThan(0)
    expect(about401.length).toBeLessThanOrEqual(20)
    expect(about401.every((line) => line.msg === 'requests refused')).toBe(true)
    expect(summed()).toBe(total)
  })
})
