import { describe, expect, setDefaultTimeout, spyOn, test } from 'bun:test'
import OpenAI from 'openai'
import { upstreamHttpError } from '../src/providers/errors'
import { CircuitBreakers } from '../src/routing/circuit'
import { dispatch, orderTargets } from '../src/routing/dispatch'
import { UpstreamConnections } from '../src/routing/connections'
import type { Alias, Target } from '../src/routing/table'
import { utcDate } from '../src/time'
import { type FaultServer, faultServer } from './support/faults'
import { seededRandom } from './support/random'
import { inProcessGateway, type InProcessGateway, json, tempDir, writeConfig } from './support/gateway'
import { waitFor } from './support/wait'
import { setup, teardown, TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

const TIER = `
[tiers.t]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 1000
`

/**
 * The upstream bounds these tests set, and the faults that pass them. The fault server and the
 * gateway share this process, and CI runs the suite beside two CPU hogs: an answer the fault server
 * gives at once can take a few hundred milliseconds to arrive. So a bound that an answer must beat
 * is a second or more, and a fault meant to pass a bound passes it twice over: the fault decides
 * which side of the bound a request lands on, not the machine's speed.
 */
const CONNECT_MS = 1000
const TIMEOUT_MS = 1500
const BOUNDS = `timeout_ms = ${TIMEOUT_MS}\nconnect_timeout_ms = ${CONNECT_MS}`
/** Headers after twice the connect timeout. */
const SLOW_FIRST_BYTE = `slow-first-byte:${2 * CONNECT_MS}`
/** Headers at once, then 50 pieces that take twice the timeout. */
const DRIP = `drip:${(2 * TIMEOUT_MS) / 50}`

let faults: FaultServer
let tag = 0
/** A unique content for a fault mode, so attempts can be counted per test. */
const mode = (m: string) => `${m}#${++tag}`

setup(() => {
  faults = faultServer()
})
teardown(() => faults.stop())

/**
 * An in-process gateway whose alias `f/x` points at the fault server with the given upstream settings;
 * `now` is its clock (circuit cooldowns, deadlines, limits), real time unless given.
 */
async function gatewayWith(upstreamSettings: string, extra = '', now?: () => number): Promise<InProcessGateway & { dispose(): void }> {
  const dir = tempDir()
  const config = writeConfig(
    dir.path,
    `${TIER}
[upstreams.faulty]
kind = "openai"
base_url = "${faults.url}"
${upstreamSettings}

[upstreams.good]
kind = "mock"

[aliases."f/x"]
targets = [{ upstream = "faulty", model = "fm" }]

# A 429 with retry-after rests its target (upstream and model): the rate-limited cases ask this one.
[aliases."f/limited"]
targets = [{ upstream = "faulty", model = "fm-limited" }]
${extra}`,
  )
  const gw = await inProcessGateway({ env: { GATEWAY_CONFIG: config }, now })
  return Object.assign(gw, {
    dispose() {
      gw.close()
      dir[Symbol.dispose]()
    },
  })
}

const chat = (gw: InProcessGateway, content: string, extra: Record<string, unknown> = {}, model = 'f/x') =>
  gw.request('/v1/chat/completions', json({ model, messages: [{ role: 'user', content }], ...extra }, { authorization: `Bearer ${gw.key}` }))

const errorOf = async (response: Response) => ((await response.json()) as { error: { message: string; type: string; code?: string } }).error

const todayUsage = async (gw: InProcessGateway) => (await gw.gateway.reports.report({ from: utcDate(Date.now()), to: utcDate(Date.now()) })).totals

/** Waits until the fault server saw `content` aborted and usage counted the request; returns what changed. */
async function abortedAndCounted(gw: InProcessGateway, content: string, before: Awaited<ReturnType<typeof todayUsage>>) {
  await waitFor(
    async () => faults.aborted.includes(content) && (await todayUsage(gw)).requests !== before.requests,
    `the fault server to see "${content}" aborted and usage to count it`,
  )
  const after = await todayUsage(gw)
  return { aborted: faults.aborted.includes(content), requests: after.requests - before.requests, errors: after.errors - before.errors }
}

async function sseEvents(response: Response): Promise<string[]> {
  return (await response.text()).split('\n\n').filter(Boolean)
}

describe('retries and failure modes (non-streaming)', () => {
  let gw: Awaited<ReturnType<typeof gatewayWith>>
  setup(async () => {
    // High threshold: these tests are about retries, not the breaker.
    gw = await gatewayWith(`max_retries = 2\n${BOUNDS}\nfailure_threshold = 1000`)
  })
  teardown(() => gw.dispose())

  test('500: retried max_retries times, then 502 upstream_error; usage counts one request, one error', async () => {
    const before = await todayUsage(gw)
    const content = mode('500')
    const response = await chat(gw, content)
    expect(response.status).toBe(502)
    expect(await errorOf(response)).toMatchObject({ type: 'upstream_error', code: 'upstream_http_error' })
    expect(response.headers.get('x-svc-attempts')).toBe('3')
    expect(response.headers.get('x-svc-upstream')).toBe('faulty')
    expect(faults.hits.get(content)).toBe(3)
    const after = await todayUsage(gw)
    expect(after.requests - before.requests).toBe(1)
    expect(after.errors - before.errors).toBe(1)
  })

  test('a flaky upstream that recovers within max_retries serves the request', async () => {
    const content = mode('flaky:2')
    const response = await chat(gw, content)
    expect(response.status).toBe(200)
    expect(response.headers.get('x-svc-attempts')).toBe('3')
    expect(faults.hits.get(content)).toBe(3)
  })

  test('429 with retry-after-ms: waits as told, then 429 upstream_rate_limited with Retry-After', async () => {
    const content = mode('429:60')
    const response = await chat(gw, content, {}, 'f/limited')
    expect(response.status).toBe(429)
    expect(await errorOf(response)).toMatchObject({ type: 'rate_limit_error', code: 'upstream_rate_limited' })
    expect(response.headers.get('retry-after')).toBe('1')
    expect(faults.hits.get(content)).toBe(3)

    // How long it waited, on an injected clock: the dispatcher, given the upstream's own 429 (parsed
    // as the gateway parses it), sleeps exactly the retry-after-ms between attempts, and only then.
    const events: string[] = []
    let clock = 0
    const upstream = { name: 'u', maxRetries: 2, timeoutMs: 60_000, connectTimeoutMs: 60_000, failureThreshold: 1000, cooldownMs: 1000 }
    const alias = { name: 'a/x', strategy: 'fallback', targets: [{ upstream, model: 'm', weight: 1 }], model: {} } as unknown as Alias
    const failure = await dispatch(
      alias,
      {
        clientSignal: new AbortController().signal,
        circuits: new CircuitBreakers(),
        connections: new UpstreamConnections(10),
        deadlineMs: 120_000,
        now: () => clock,
        sleep: async (ms) => {
          events.push(`sleep ${ms}`)
          clock += ms
        },
        onAttempt: (_target, attempt) => events.push(`attempt ${attempt}`),
      },
      async () => {
        throw upstreamHttpError('u', 429, new Headers({ 'retry-after-ms': '60', 'retry-after': '1' }), '{"error":{"message":"slow down"}}')
      },
    ).catch((error: unknown) => error)
    expect(events).toEqual(['attempt 1', 'sleep 60', 'attempt 2', 'sleep 60', 'attempt 3'])
    expect(failure).toMatchObject({ type: 'rate_limit_error', code: 'upstream_rate_limited', retryAfterMs: 60 })
  })

  test('429 with a retry-after-ms past the request deadline: not waited for, one attempt, the caller told when to retry', async () => {
    // The same upstream answer with a longer wait: within what the gateway honours (10 s), past what
    // is left of a 4 s deadline. Waiting would only spend the deadline, so it does not retry at all.
    const short = await gatewayWith(`max_retries = 2\n${BOUNDS}\nfailure_threshold = 1000`, '[routing]\ndeadline_ms = 4000\n')
    try {
      const content = mode('429:9000')
      const response = await chat(short, content)
      expect(response.status).toBe(429)
      expect(await errorOf(response)).toMatchObject({ type: 'rate_limit_error', code: 'upstream_rate_limited' })
      expect(response.headers.get('retry-after')).toBe('9')
      expect(response.headers.get('x-svc-attempts')).toBe('1')
      expect(faults.hits.get(content)).toBe(1)
    } finally {
      short.dispose()
    }
  })

  // The next three wait out the upstream bounds on every attempt (3 to 5 s each): they run side by
  // side. Each has its own content, so the fault server counts its attempts and aborts apart, and
  // none of them reads usage, which their overlapping requests would share.
  test.concurrent('hang forever: 504 timeout_error after connect_timeout_ms, and the upstream request is aborted', async () => {
    const content = mode('hang')
    const response = await chat(gw, content)
    expect(response.status).toBe(504)
    const error = await errorOf(response)
    expect(error).toMatchObject({ type: 'timeout_error', code: 'upstream_timeout' })
    // connect_timeout_ms, not timeout_ms, cut the attempts: all 3 of them.
    expect(error.message).toContain(`no response within ${CONNECT_MS} ms`)
    expect(response.headers.get('x-svc-attempts')).toBe('3')
    expect(faults.hits.get(content)).toBe(3)
    // The gateway hung up on each: the fault server sees the three aborts.
    const aborts = () => faults.aborted.filter((c) => c === content).length
    await waitFor(() => aborts() >= 3, `the fault server to see the 3 attempts of "${content}" aborted`)
    expect(aborts()).toBe(3)
  })

  test.concurrent('slow first byte beyond connect_timeout_ms: 504', async () => {
    const content = mode(SLOW_FIRST_BYTE)
    const response = await chat(gw, content)
    expect(response.status).toBe(504)
    expect((await errorOf(response)).message).toContain(`no response within ${CONNECT_MS} ms`)
  })

  test.concurrent('a body that drips slower than timeout_ms: 504', async () => {
    const content = mode(DRIP)
    const response = await chat(gw, content)
    expect(response.status).toBe(504)
    expect((await errorOf(response)).message).toContain(`no complete answer within ${TIMEOUT_MS} ms`)
  })

  test('socket dropped mid-body: 502 upstream_connection_error after retries', async () => {
    const content = mode('reset-body')
    const response = await chat(gw, content)
    expect(response.status).toBe(502)
    expect(await errorOf(response)).toMatchObject({ type: 'upstream_error', code: 'upstream_connection_error' })
    expect(faults.hits.get(content)).toBe(3)
  })

  test('invalid JSON, an HTML page, the wrong content type: 502 upstream_invalid_response', async () => {
    for (const m of ['invalid-json', 'html', 'wrong-content-type']) {
      const response = await chat(gw, mode(m))
      expect(response.status).toBe(502)
      expect(await errorOf(response)).toMatchObject({ type: 'upstream_error', code: 'upstream_invalid_response' })
    }
  })

  test('an HTML error page with a 5xx: 502 with a readable excerpt, not the markup', async () => {
    const response = await chat(gw, mode('503-html'))
    expect(response.status).toBe(502)
    const error = await errorOf(response)
    expect(error.message).toContain('503 Service Unavailable')
    expect(error.message).not.toContain('<h1>')
  })

  test("upstream 400: the caller gets the upstream's status and message, not retried", async () => {
    const content = mode('400')
    const response = await chat(gw, content)
    expect(response.status).toBe(400)
    expect(await errorOf(response)).toMatchObject({ type: 'invalid_request_error', message: 'context_length_exceeded: too many tokens' })
    expect(faults.hits.get(content)).toBe(1)
    expect(response.headers.get('x-svc-attempts')).toBe('1')
  })

  test('upstream 401: 502 upstream_auth_failed, not retried, the upstream message not relayed, logged loudly', async () => {
    const lines: string[] = []
    const original = gw.gateway.log.error.bind(gw.gateway.log)
    gw.gateway.log.error = ((fields: unknown, message?: string) => {
      lines.push(JSON.stringify({ fields, message }))
      return original(fields as Record<string, unknown>, message)
    }) as typeof gw.gateway.log.error
    const content = mode('401')
    const response = await chat(gw, content)
    gw.gateway.log.error = original
    expect(response.status).toBe(502)
    const error = await errorOf(response)
    expect(error).toMatchObject({ type: 'upstream_error', code: 'upstream_auth_failed' })
    expect(error.message).not.toContain('sk-upstr')
    expect(faults.hits.get(content)).toBe(1)
    expect(lines.some((l) => l.includes('rejected the gateway') && l.includes('faulty'))).toBe(true)
  })
})

describe('streams', () => {
  let gw: Awaited<ReturnType<typeof gatewayWith>>
  setup(async () => {
    gw = await gatewayWith(
      `max_retries = 0\ntimeout_ms = ${TIMEOUT_MS}\nfailure_threshold = 1000`,
      `
[aliases."f/backed"]
targets = [{ upstream = "faulty", model = "fm" }, { upstream = "good", model = "echo" }]
`,
    )
  })
  teardown(() => gw.dispose())

  test('the upstream requested usage even though the caller did not; the usage chunk is stripped', async () => {
    const response = await chat(gw, mode('ok'), { stream: true })
    const events = await sseEvents(response)
    expect(events.at(-1)).toBe('data: [DONE]')
    expect(events.some((e) => e.includes('"usage"'))).toBe(false)
    expect(faults.lastBody()?.stream_options).toEqual({ include_usage: true })
    // The usage it reported is still counted.
    expect((await todayUsage(gw)).completion_tokens).toBeGreaterThanOrEqual(1)
  })

  test('cut after 3 chunks: the 3 chunks, then an error event, no [DONE]; usage counts an error', async () => {
    const before = await todayUsage(gw)
    const response = await chat(gw, mode('reset-stream:3'), { stream: true })
    expect(response.status).toBe(200)
    const events = await sseEvents(response)
    expect(events).toHaveLength(4)
    expect(events.some((e) => e.includes('[DONE]'))).toBe(false)
    const error = JSON.parse(events[3]!.slice('data: '.length)) as { error: { type: string; code: string } }
    expect(error.error).toMatchObject({ type: 'upstream_error', code: 'upstream_connection_error' })
    const after = await todayUsage(gw)
    expect(after.requests - before.requests).toBe(1)
    expect(after.errors - before.errors).toBe(1)
  })

  test('a stream that drips past timeout_ms ends with a timeout_error event', async () => {
    const response = await chat(gw, mode(DRIP), { stream: true })
    expect(response.status).toBe(200)
    const events = await sseEvents(response)
    const last = JSON.parse(events.at(-1)!.slice('data: '.length)) as { error: { type: string } }
    expect(last.error.type).toBe('timeout_error')
    expect(events.some((e) => e.includes('[DONE]'))).toBe(false)
  })

  test('failure before the first byte fails over to the next target', async () => {
    const response = await chat(gw, mode('500'), { stream: true }, 'f/backed')
    expect(response.status).toBe(200)
    expect(response.headers.get('x-svc-upstream')).toBe('good')
    expect(response.headers.get('x-svc-attempts')).toBe('2')
    const events = await sseEvents(response)
    expect(events.at(-1)).toBe('data: [DONE]')
  })

  test('the official openai client never sees a cut stream as a normal completion', async () => {
    const url = gw.listen()
    const client = new OpenAI({ apiKey: gw.key, baseURL: `${url}/v1`, maxRetries: 0 })
    const stream = await client.chat.completions.create({ model: 'f/x', messages: [{ role: 'user', content: mode('reset-stream:3') }], stream: true })
    const pieces: string[] = []
    let failure: unknown = null
    try {
      for await (const chunk of stream) pieces.push(chunk.choices[0]?.delta?.content ?? '')
    } catch (error) {
      failure = error
    }
    expect(pieces.join('')).toBe('c0 c1 c2 ')
    expect(failure).toBeInstanceOf(OpenAI.APIError)
  })

  test("a non-streaming caller's disconnect aborts the upstream request too", async () => {
    const url = gw.listen()
    const before = await todayUsage(gw)
    const content = mode('hang')
    const controller = new AbortController()
    const pending = fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.key}` },
      body: JSON.stringify({ model: 'f/x', messages: [{ role: 'user', content }] }),
      signal: controller.signal,
    }).catch(() => 'aborted')
    await waitFor(() => faults.hits.has(content), `the fault server to receive "${content}"`)
    controller.abort()
    expect(await pending).toBe('aborted')
    // The upstream sees the abort, and the request is counted once, as an error.
    expect(await abortedAndCounted(gw, content, before)).toEqual({ aborted: true, requests: 1, errors: 1 })
  })

  test("the caller's disconnect aborts the upstream request and is counted as an error", async () => {
    const url = gw.listen()
    const before = await todayUsage(gw)
    const content = mode('hold-stream')
    const controller = new AbortController()
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.key}` },
      body: JSON.stringify({ model: 'f/x', stream: true, messages: [{ role: 'user', content }] }),
      signal: controller.signal,
    })
    const reader = response.body!.getReader()
    const first = new TextDecoder().decode((await reader.read()).value)
    expect(first).toContain('first ')
    controller.abort()
    expect(await abortedAndCounted(gw, content, before)).toEqual({ aborted: true, requests: 1, errors: 1 })
  })
})

describe('every fault mode: status, type, attempts, circuit and usage', () => {
  // One attempt per request (max_retries = 0) and a breaker that opens on the first failure, so each
  // row shows exactly what one failure of that kind does.
  const rows: [mode: string, stream: boolean, status: number, type: string, circuit: 'open' | 'closed'][] = [
    ['500', false, 502, 'upstream_error', 'open'],
    ['429:20', false, 429, 'rate_limit_error', 'open'],
    ['reset-body', false, 502, 'upstream_error', 'open'],
    ['invalid-json', false, 502, 'upstream_error', 'open'],
    ['503-html', false, 502, 'upstream_error', 'open'],
    ['html', false, 502, 'upstream_error', 'open'],
    ['wrong-content-type', false, 502, 'upstream_error', 'open'],
    ['400', false, 400, 'invalid_request_error', 'closed'],
    // The gateway's own credentials: never retried on the target, counted against its circuit (the next target may hold good ones).
    ['401', false, 502, 'upstream_error', 'open'],
    ['403', false, 502, 'upstream_error', 'open'],
    ['reset-stream:0', true, 502, 'upstream_error', 'open'],
    ['reset-stream:3', true, 200, 'upstream_error', 'open'],
    // The last four wait out a bound (1 to 1.5 s each): they run side by side, each on a gateway of
    // its own (its circuits, its usage) with a content of its own at the fault server. Only these:
    // a row whose answer must beat a bound runs alone, so the others' work cannot push it past it.
    ['hang', false, 504, 'timeout_error', 'open'],
    [SLOW_FIRST_BYTE, false, 504, 'timeout_error', 'open'],
    [DRIP, false, 504, 'timeout_error', 'open'],
    [DRIP, true, 200, 'timeout_error', 'open'],
  ]
  for (const [m, stream, status, type, circuit] of rows) {
    const waitsOutABound = type === 'timeout_error'
    ;(waitsOutABound ? test.concurrent : test)(`${m}${stream ? ' (stream)' : ''}: ${status} ${type}, circuit ${circuit}`, async () => {
      const gw = await gatewayWith(`max_retries = 0\n${BOUNDS}\nfailure_threshold = 1\ncooldown_ms = 60000`)
      try {
        const content = mode(m)
        const response = await chat(gw, content, stream ? { stream: true } : {})
        expect(response.status).toBe(status)
        expect(response.headers.get('x-svc-attempts')).toBe('1')
        expect(response.headers.get('x-svc-upstream')).toBe('faulty')
        expect(response.headers.get('x-svc-model')).toBe('fm')
        const error =
          status === 200
            ? (JSON.parse((await sseEvents(response)).at(-1)!.slice('data: '.length)) as { error: { type: string } }).error
            : await errorOf(response)
        expect(error.type).toBe(type)
        expect(faults.hits.get(content)).toBe(1)
        expect(gw.gateway.circuits.state('faulty/fm', { failureThreshold: 1, cooldownMs: 60_000 }, Date.now())).toBe(circuit)
        expect(await todayUsage(gw)).toMatchObject({ requests: 1, errors: 1 })
      } finally {
        gw.dispose()
      }
    })
  }
})

describe('fallback, deadline and circuit breaking', () => {
  test('a dead target (connection refused) fails over to the next one', async () => {
    const gw = await gatewayWith(
      'max_retries = 0',
      `
[upstreams.dead]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
max_retries = 1

[aliases."f/fallback"]
targets = [{ upstream = "dead", model = "d1" }, { upstream = "good", model = "echo" }]
`,
    )
    try {
      const response = await chat(gw, 'hello', {}, 'f/fallback')
      expect(response.status).toBe(200)
      expect(response.headers.get('x-svc-upstream')).toBe('good')
      expect(response.headers.get('x-svc-model')).toBe('echo')
      // Two attempts on the dead target (1 + max_retries), then the good one.
      expect(response.headers.get('x-svc-attempts')).toBe('3')
    } finally {
      gw.dispose()
    }
  })

  test('the request deadline bounds all attempts together', async () => {
    // A deadline the request reaches the fault server well within, on a busy machine too.
    const deadlineMs = CONNECT_MS
    const gw = await gatewayWith(
      `max_retries = 5\ntimeout_ms = ${4 * deadlineMs}\nconnect_timeout_ms = ${4 * deadlineMs}`,
      `[routing]\ndeadline_ms = ${deadlineMs}\n`,
    )
    try {
      const content = mode('hang')
      const response = await chat(gw, content)
      expect(response.status).toBe(504)
      const error = await errorOf(response)
      expect(error).toMatchObject({ type: 'timeout_error', code: 'upstream_timeout' })
      // The attempt was given what was left of the deadline, not its own, longer timeout ...
      const given = Number(/no complete answer within (\d+) ms/.exec(error.message)?.[1])
      expect(given).toBeGreaterThan(0)
      expect(given).toBeLessThanOrEqual(deadlineMs)
      // ... and once it was spent, none of the 5 retries was started.
      expect(response.headers.get('x-svc-attempts')).toBe('1')
      expect(faults.hits.get(content)).toBe(1)
    } finally {
      gw.dispose()
    }
  })

  // The breaker reads the gateway's clock: these tests inject one that stands still until they move
  // it, so a cooldown ends exactly when the test says, however slow the machine.
  test('after failure_threshold failures the circuit opens: 503 overloaded_error with Retry-After, upstream untouched; one probe closes it', async () => {
    let clock = Date.now()
    const gw = await gatewayWith('max_retries = 0\nfailure_threshold = 2\ncooldown_ms = 300', '', () => clock)
    const state = () => gw.gateway.circuits.state('faulty/fm', { failureThreshold: 2, cooldownMs: 300 }, clock)
    try {
      for (let i = 0; i < 2; i++) expect((await chat(gw, mode('500'))).status).toBe(502)
      const content = mode('ok')
      const refused = await chat(gw, content)
      expect(refused.status).toBe(503)
      expect(await errorOf(refused)).toMatchObject({ type: 'overloaded_error', code: 'circuit_open' })
      expect(refused.headers.get('retry-after')).toBe('1')
      expect(faults.hits.get(content)).toBeUndefined()
      expect(state()).toBe('open')

      // Still open 1 ms before the cooldown ends.
      clock += 299
      expect((await chat(gw, content)).status).toBe(503)
      expect(faults.hits.get(content)).toBeUndefined()
      // Half-open once it has passed: the probe succeeds and closes the circuit.
      clock += 1
      expect(state()).toBe('half_open')
      expect((await chat(gw, content)).status).toBe(200)
      expect(faults.hits.get(content)).toBe(1)
      expect(state()).toBe('closed')
      expect((await chat(gw, mode('ok'))).status).toBe(200)
    } finally {
      gw.dispose()
    }
  })

  test('a failed probe opens the circuit again at once', async () => {
    let clock = Date.now()
    const gw = await gatewayWith('max_retries = 0\nfailure_threshold = 3\ncooldown_ms = 200', '', () => clock)
    try {
      for (let i = 0; i < 3; i++) await chat(gw, mode('500'))
      clock += 200
      const probe = mode('500')
      expect((await chat(gw, probe)).status).toBe(502)
      expect(faults.hits.get(probe)).toBe(1)
      // Not a millisecond later on the gateway's clock: open again, the upstream untouched.
      const content = mode('ok')
      expect((await chat(gw, content)).status).toBe(503)
      expect(faults.hits.get(content)).toBeUndefined()
    } finally {
      gw.dispose()
    }
  })

  test('an open circuit fails over to the next target', async () => {
    const clock = Date.now()
    const gw = await gatewayWith(
      'max_retries = 0\nfailure_threshold = 1\ncooldown_ms = 5000',
      `
[aliases."f/backed"]
targets = [{ upstream = "faulty", model = "fm" }, { upstream = "good", model = "echo" }]
`,
      // A clock that stands still: the cooldown cannot end between the two requests.
      () => clock,
    )
    try {
      expect((await chat(gw, mode('500'))).status).toBe(502)
      const content = mode('ok')
      const response = await chat(gw, content, {}, 'f/backed')
      expect(response.status).toBe(200)
      expect(response.headers.get('x-svc-upstream')).toBe('good')
      expect(response.headers.get('x-svc-attempts')).toBe('1')
      expect(faults.hits.get(content)).toBeUndefined()
    } finally {
      gw.dispose()
    }
  })
})

describe('weighted strategy', () => {
  const target = (name: string, weight: number) => ({ upstream: { name }, model: name, weight }) as unknown as Target
  const alias = (targets: Target[]): Alias => ({ name: 'w/x', strategy: 'weighted', targets, model: {} as Alias['model'], hostedTools: 'drop' })

  test('draws by weight without replacement; weight 0 only as the last resort', () => {
    const a = alias([target('a', 3), target('b', 1), target('z', 0)])
    expect(orderTargets(a, () => 0).map((t) => t.model)).toEqual(['a', 'b', 'z'])
    expect(orderTargets(a, () => 0.74).map((t) => t.model)).toEqual(['a', 'b', 'z'])
    expect(orderTargets(a, () => 0.76).map((t) => t.model)).toEqual(['b', 'a', 'z'])
  })

  test('first choices split by weight over many draws (seeded)', () => {
    const a = alias([target('a', 3), target('b', 1)])
    const random = seededRandom(23)
    const firsts = { a: 0, b: 0 }
    for (let i = 0; i < 10_000; i++) firsts[orderTargets(a, random)[0]!.model as 'a' | 'b']++
    // Expected 7,500 / 2,500; the seed makes the count the same on every run.
    expect(firsts.a).toBeGreaterThan(7_300)
    expect(firsts.a).toBeLessThan(7_700)
    expect(firsts.a + firsts.b).toBe(10_000)
  })

  test('traffic splits by weight through the gateway', async () => {
    const gw = await gatewayWith(
      '',
      `
[upstreams.good2]
kind = "mock"

[aliases."w/split"]
strategy = "weighted"
targets = [{ upstream = "good", model = "echo", weight = 3 }, { upstream = "good2", model = "echo", weight = 1 }]
`,
    )
    // The gateway draws with Math.random: seeded here, so the split is the same on every run.
    const random = spyOn(Math, 'random').mockImplementation(seededRandom(9))
    try {
      const counts: Record<string, number> = {}
      for (let i = 0; i < 400; i++) {
        const upstream = (await chat(gw, 'x', {}, 'w/split')).headers.get('x-svc-upstream')!
        counts[upstream] = (counts[upstream] ?? 0) + 1
      }
      // Expected 300 / 100.
      expect(counts.good).toBeGreaterThan(255)
      expect(counts.good).toBeLessThan(345)
      expect(counts.good! + counts.good2!).toBe(400)
    } finally {
      random.mockRestore()
      gw.dispose()
    }
  })
})
