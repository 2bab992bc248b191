import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { inProcessGateway, tempDir, writeConfig } from './support/gateway'
import { runCli, spawnGateway } from './support/process'
import { waitFor } from './support/wait'
import { fakeUpstream, openaiCompletion } from './support/upstream'
import { setup, teardown, TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

/** An upstream that holds each request until the test releases it, reporting fixed usage. */
function gatedUpstream(usage = { prompt_tokens: 40, completion_tokens: 20, total_tokens: 60 }) {
  const waiting: (() => void)[] = []
  const aborted: number[] = []
  let seen = 0
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const body = (await req.json()) as { model: string; messages: { content: string }[] }
      const n = ++seen
      req.signal.addEventListener('abort', () => aborted.push(n), { once: true })
      if (body.messages.at(-1)!.content === 'wait') await new Promise<void>((resolve) => waiting.push(resolve))
      return openaiCompletion(body.model, 'done', usage)
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}/v1`,
    waiting,
    aborted,
    releaseAll: () => waiting.splice(0).forEach((resolve) => resolve()),
    stop: () => void server.stop(true),
  }
}

function configFor(upstreamUrl: string, tier: string) {
  return `
[tiers.t]
${tier}

[upstreams.up]
kind = "openai"
base_url = "${upstreamUrl}"
max_retries = 0

[upstreams.local]
kind = "mock"

[aliases."up/model"]
targets = [{ upstream = "up", model = "m" }]

[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]
`
}

const post = (url: string, key: string, content: string, signal?: AbortSignal, model = 'up/model') =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, messages: [{ role: 'user', content }] }),
    signal,
  })

/** An in-process gateway on a real socket, its tier set by `tier`, in front of a gated upstream. */
async function gatewayWithTier(tier: string, usage?: Parameters<typeof gatedUpstream>[0]) {
  const dir = tempDir()
  const upstream = gatedUpstream(usage)
  const gw = await inProcessGateway({ env: { GATEWAY_CONFIG: writeConfig(dir.path, configFor(upstream.url, tier)) } })
  return {
    gw,
    upstream,
    url: gw.listen(),
    dispose() {
      gw.close()
      upstream.stop()
      dir[Symbol.dispose]()
    },
  }
}

describe('limits under concurrency', () => {
  let tiered: Awaited<ReturnType<typeof gatewayWithTier>>
  setup(async () => (tiered = await gatewayWithTier('requests_per_minute = 50\ntokens_per_minute = 100000000\nmax_concurrent = 1000')))
  teardown(() => tiered.dispose())

  test('200 concurrent requests at 50 rpm: exactly 50 succeed with remaining {49..0}, 150 get 429', async () => {
    const { gw, url } = tiered
    const responses = await Promise.all(Array.from({ length: 200 }, () => post(url, gw.key, 'go', undefined, 'local/echo')))
    const ok = responses.filter((r) => r.status === 200)
    const refused = responses.filter((r) => r.status === 429)
    expect(ok).toHaveLength(50)
    expect(refused).toHaveLength(150)
    const remaining = ok.map((r) => Number(r.headers.get('x-ratelimit-remaining'))).sort((a, b) => a - b)
    expect(remaining).toEqual(Array.from({ length: 50 }, (_, i) => i))
    for (const response of refused) {
      expect(response.headers.get('x-ratelimit-limit')).toBe('50')
      expect(response.headers.get('x-ratelimit-remaining')).toBe('0')
      expect(response.headers.get('x-svc-tier')).toBe('t')
      const retryAfter = Number(response.headers.get('retry-after'))
      expect(retryAfter).toBeGreaterThanOrEqual(59)
      expect(retryAfter).toBeLessThanOrEqual(60)
      expect(response.headers.get('x-ratelimit-reset')).toBe(String(retryAfter))
      expect(await response.json()).toMatchObject({ error: { type: 'rate_limit_error', code: 'rate_limit_exceeded' } })
    }
  })
})

describe('max_concurrent', () => {
  let tiered: Awaited<ReturnType<typeof gatewayWithTier>>
  setup(async () => (tiered = await gatewayWithTier('requests_per_minute = 1000\ntokens_per_minute = 100000000\nmax_concurrent = 2')))
  teardown(() => tiered.dispose())

  test('the third concurrent request is refused at once; capacity returns on completion and on disconnect', async () => {
    const { gw, url, upstream } = tiered
    const first = post(url, gw.key, 'wait')
    const controller = new AbortController()
    const second = post(url, gw.key, 'wait', controller.signal).catch(() => 'aborted')
    await waitFor(() => upstream.waiting.length >= 2, 'two requests held by the upstream')

    // Refused by the gateway, not queued behind the two: it never reaches the upstream.
    const third = await post(url, gw.key, 'now')
    expect(third.status).toBe(429)
    expect(upstream.waiting.length).toBe(2)
    expect(third.headers.get('retry-after')).toBe('1')
    expect(await third.json()).toMatchObject({ error: { type: 'rate_limit_error', code: 'concurrency_limit_exceeded' } })

    // The disconnecting client frees its slot.
    controller.abort()
    expect(await second).toBe('aborted')
    await waitFor(async () => (await post(url, gw.key, 'now')).status === 200, 'the disconnected request to free its slot')

    // Completion frees the other one: two can be in flight again.
    upstream.releaseAll()
    expect((await first).status).toBe(200)
    const pair = [post(url, gw.key, 'wait'), post(url, gw.key, 'wait')]
    await waitFor(() => upstream.waiting.length >= 2, 'the next two requests held by the upstream')
    expect((await post(url, gw.key, 'now')).status).toBe(429)
    upstream.releaseAll()
    for (const response of await Promise.all(pair)) expect(response.status).toBe(200)
  })
})

describe('tokens per minute', () => {
  test('usage reported by the upstream is charged; the next request is refused with Retry-After', async () => {
    const { gw, url, dispose } = await gatewayWithTier('requests_per_minute = 1000\ntokens_per_minute = 100\nmax_concurrent = 10', {
      prompt_tokens: 40,
      completion_tokens: 20,
      total_tokens: 60,
    })
    try {
      const first = await post(url, gw.key, 'go')
      expect(first.status).toBe(200)
      expect(first.headers.get('x-ratelimit-limit-tokens')).toBe('100')
      expect(first.headers.get('x-ratelimit-remaining-tokens')).toBe('100')
      const second = await post(url, gw.key, 'go')
      expect(second.status).toBe(200)
      expect(second.headers.get('x-ratelimit-remaining-tokens')).toBe('40')
      const third = await post(url, gw.key, 'go')
      expect(third.status).toBe(429)
      expect(third.headers.get('x-ratelimit-remaining-tokens')).toBe('0')
      const retryAfter = Number(third.headers.get('retry-after'))
      expect(retryAfter).toBeGreaterThanOrEqual(59)
      expect(retryAfter).toBeLessThanOrEqual(60)
      expect(await third.json()).toMatchObject({ error: { type: 'rate_limit_error', code: 'rate_limit_exceeded' } })
    } finally {
      dispose()
    }
  })
})

// From here on, each test has a gateway of its own, on a database of its own: they run side by side.

describe('usage you can bill from', () => {
  test.concurrent('500 concurrent completions through the real server: /v1/usage and the CLI agree exactly, before and after SIGKILL', async () => {
    using dir = tempDir()
    // Usage differs per request, so only exact accounting adds up.
    const upstream = fakeUpstream((req) => {
      const n = Number((req.body.messages as { content: string }[]).at(-1)!.content)
      const usage = { prompt_tokens: 10 + (n % 7), completion_tokens: 1 + (n % 13), total_tokens: 11 + (n % 7) + (n % 13) }
      return openaiCompletion(String(req.body.model), `answer ${n}`, usage)
    })
    const env = {
      GATEWAY_DB: `${dir.path}/gateway.sqlite`,
      GATEWAY_CONFIG: writeConfig(dir.path, configFor(upstream.url, 'requests_per_minute = 1000\ntokens_per_minute = 100000000\nmax_concurrent = 1000')),
    }
    const N = 500
    let prompt = 0
    let completion = 0
    for (let n = 0; n < N; n++) {
      prompt += 10 + (n % 7)
      completion += 1 + (n % 13)
    }
    const expected = {
      requests: N,
      errors: 0,
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
      cost_usd: 0,
      cache_saved_usd: 0,
    }

    const first = await spawnGateway(env, { expectFirstKey: true })
    try {
      const key = first.firstKey!
      const statuses = await Promise.all(Array.from({ length: N }, (_, n) => post(first.url, key, String(n)).then((r) => r.status)))
      expect(statuses.filter((s) => s === 200)).toHaveLength(N)

      const usage = async (url: string) => {
        const response = await fetch(`${url}/v1/usage`, { headers: { 'x-api-key': key } })
        expect(response.status).toBe(200)
        return (await response.json()) as { object: string; totals: Record<string, number>; data: Record<string, unknown>[] }
      }
      const viaApi = await usage(first.url)
      expect(viaApi.object).toBe('usage')
      expect(viaApi.totals).toEqual(expected)
      expect(viaApi.data).toHaveLength(1)
      expect(viaApi.data[0]).toMatchObject({ alias: 'up/model', upstream: 'up', requests: N })
      expect(Number(viaApi.data[0]!.latency_ms_sum)).toBeGreaterThanOrEqual(0)
      const viaCli = JSON.parse((await runCli(['usage', '--json'], env)).stdout) as { totals: Record<string, number> }
      expect(viaCli.totals).toEqual(expected)

      expect(await first.stop('SIGKILL')).not.toBe(0)
      const second = await spawnGateway(env)
      try {
        expect((await usage(second.url)).totals).toEqual(expected)
        expect((JSON.parse((await runCli(['usage', '--json'], env)).stdout) as { totals: Record<string, number> }).totals).toEqual(expected)
      } finally {
        await second.stop()
      }
    } finally {
      first.proc.kill('SIGKILL')
      upstream.stop()
    }
  })

  test.concurrent('GET /v1/usage validates its dates and shows only the caller', async () => {
    const gw = await inProcessGateway()
    try {
      const get = (query: string, key = gw.key) => gw.request(`/v1/usage${query}`, { headers: { authorization: `Bearer ${key}` } })
      for (const [query, param] of [
        ['?from=2026-13-01', 'from'],
        ['?to=yesterday', 'to'],
        ['?from=2026-02-30', 'from'],
        ['?from=2026-05-02&to=2026-05-01', 'from'],
      ]) {
        const response = await get(query!)
        expect(response.status).toBe(400)
        expect(await response.json()).toMatchObject({ error: { type: 'invalid_request_error', param } })
      }
      expect((await gw.request('/v1/usage')).status).toBe(401)
      const other = await gw.gateway.keys.create({ name: 'other', tier: 'pro' })
      await gw.request('/v1/chat/completions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': other.key },
        body: JSON.stringify({ model: 'local/echo', messages: [{ role: 'user', content: 'a b c' }] }),
      })
      const mine = (await (await get('')).json()) as { totals: { requests: number } }
      expect(mine.totals.requests).toBe(0)
      const theirs = (await (await get('', other.key)).json()) as { totals: { requests: number; total_tokens: number } }
      expect(theirs.totals).toMatchObject({ requests: 1, total_tokens: 6 })
    } finally {
      gw.close()
    }
  })
})

describe('quotas and per-key overrides through the CLI', () => {
  test.concurrent('a key created with --daily-request-quota 3 is refused the 4th request, also after a restart', async () => {
    using dir = tempDir()
    const env = { GATEWAY_DB: `${dir.path}/gateway.sqlite` }
    const created = JSON.parse(
      (await runCli(['keys', 'create', '--name', 'q', '--tier', 'pro', '--daily-request-quota', '3', '--rpm', '7', '--json'], env)).stdout,
    ) as { key: string }
    const listed = JSON.parse((await runCli(['keys', 'list', '--json'], env)).stdout) as Record<string, unknown>[]
    expect(listed[0]).toMatchObject({ rpm: 7, daily_request_quota: 3 })
    const first = await spawnGateway(env)
    try {
      for (let i = 0; i < 3; i++) {
        const response = await post(first.url, created.key, 'x', undefined, 'local/echo')
        expect(response.status).toBe(200)
        expect(response.headers.get('x-ratelimit-limit')).toBe('7')
      }
      const refused = await post(first.url, created.key, 'x', undefined, 'local/echo')
      expect(refused.status).toBe(429)
      expect(await refused.json()).toMatchObject({ error: { type: 'rate_limit_error', code: 'quota_exceeded' } })
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
      await first.stop()
      const second = await spawnGateway(env)
      try {
        expect((await post(second.url, created.key, 'x', undefined, 'local/echo')).status).toBe(429)
      } finally {
        await second.stop()
      }
    } finally {
      first.proc.kill('SIGKILL')
    }
  })
})
