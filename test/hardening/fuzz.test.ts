/**
 * Property tests against one real gateway (`bun src/main.ts`): random chat bodies, headers, methods
 * and paths, and random key numbers on the admin API, sent with fetch. Whatever arrives, the gateway
 * never answers 5xx, and every 4xx is its JSON error, `{"error":{"message": string, "type": string, ...}}`.
 * Fixed seeds and bounded runs (500 requests in all, about a second): a failure replays the same
 * way. Shrinking is off (endOnFailure), so a failure costs no extra requests; the counterexample is
 * the request as generated.
 *
 * Statuses Bun answers itself, with no body (431 for huge headers, 505 for a NUL in the path, 400
 * for a missing Host), cannot come from fetch with these generators: none are excluded.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import fc from 'fast-check'
import { tempDir, writeConfig } from '../support/gateway'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { setup, teardown, TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

const ADMIN_KEY = 'admin-key-for-tests-0123456789'
const SEED = 20_261_123

const CONFIG = `
[tiers.main]
requests_per_minute = 1000000
tokens_per_minute = 1000000000
max_concurrent = 64

[upstreams.local]
kind = "mock"

[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]
`

const dir = tempDir('chatgate-fuzz-')
let gateway: GatewayProcess
let key: string
/** A key of its own for the admin routes to change and revoke, so the chat runs keep theirs. */
let spareId: string

setup(async () => {
  gateway = await spawnGateway(
    { GATEWAY_DB: `${dir.path}/gateway.sqlite`, GATEWAY_CONFIG: writeConfig(dir.path, CONFIG), GATEWAY_ADMIN_KEY: ADMIN_KEY },
    { expectFirstKey: true },
  )
  key = gateway.firstKey!
  const spare = await fetch(`${gateway.url}/admin/keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_KEY}` },
    body: JSON.stringify({ name: 'spare', tier: 'main' }),
  })
  spareId = ((await spare.json()) as { id: string }).id
})

teardown(async () => {
  await gateway.stop()
  dir[Symbol.dispose]()
})

// ---- generators ----

/** Printable ASCII: what fetch sends as a header value. */
const headerText = (maxLength = 64) => fc.string({ unit: 'grapheme-ascii', maxLength })

/** Any JSON value, of bounded size. */
const anyJson = fc.jsonValue({ maxDepth: 4 })

const sometimes = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 2 })

const part = fc.oneof(
  fc.record({ type: fc.constant('text'), text: fc.string() }),
  fc.record({ type: fc.oneof(fc.constantFrom('text', 'image_url', 'input_audio', ''), fc.string()), text: anyJson }, { requiredKeys: [] }),
  fc.dictionary(fc.string({ maxLength: 8 }), anyJson, { maxKeys: 4 }),
  anyJson,
)

const message = fc.oneof(
  { weight: 6, arbitrary: fc.record({ role: fc.constantFrom('user', 'system', 'assistant', 'developer', 'tool'), content: fc.string() }) },
  {
    weight: 2,
    arbitrary: fc.record({ role: fc.constant('user'), content: fc.array(fc.record({ type: fc.constant('text'), text: fc.string() }), { maxLength: 3 }) }),
  },
  fc.record(
    {
      role: fc.oneof(fc.constantFrom('user', 'system', 'assistant', 'developer', 'tool', 'function', 'USER', ''), anyJson),
      content: fc.oneof(fc.string(), fc.array(part, { maxLength: 4 }), fc.constant(null), anyJson),
      name: anyJson,
      tool_calls: anyJson,
    },
    { requiredKeys: [] },
  ),
  anyJson,
)

/** Chat bodies: mostly shaped like a request (local/echo, so many succeed), with fields of random types. */
const chatObject = fc.record(
  {
    model: fc.oneof({ weight: 4, arbitrary: fc.constant('local/echo') }, fc.constantFrom('local/nope', 'openai/fast', '', 'local/echo '), fc.string(), anyJson),
    messages: fc.oneof({ weight: 4, arbitrary: fc.array(message, { minLength: 1, maxLength: 4 }) }, fc.constant([]), anyJson),
    temperature: fc.oneof({ weight: 3, arbitrary: fc.double({ min: -1, max: 3, noNaN: true }) }, anyJson),
    top_p: fc.oneof({ weight: 3, arbitrary: fc.double({ min: -1, max: 2, noNaN: true }) }, anyJson),
    max_tokens: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: -5, max: 100_000 }) }, anyJson),
    stream: fc.oneof({ weight: 3, arbitrary: fc.boolean() }, anyJson),
    stream_options: fc.oneof({ weight: 3, arbitrary: fc.record({ include_usage: fc.oneof(fc.boolean(), anyJson) }) }, fc.constant(null), anyJson),
    metadata: fc.dictionary(fc.string({ maxLength: 8 }), anyJson, { maxKeys: 3 }),
  },
  { requiredKeys: ['model', 'messages'] },
)

/** Requests that should be served (random content, streaming or not, valid parameters): the answers are 200s. */
const wellFormed = fc.record(
  {
    model: fc.constant('local/echo'),
    messages: fc.array(
      fc.oneof(
        fc.record({ role: fc.constantFrom('user', 'system', 'assistant', 'developer'), content: fc.string({ unit: 'grapheme', maxLength: 40 }) }),
        fc.record({
          role: fc.constant('user'),
          content: fc.array(fc.record({ type: fc.constant('text'), text: fc.string({ maxLength: 20 }) }), { minLength: 1, maxLength: 3 }),
        }),
      ),
      { minLength: 1, maxLength: 3 },
    ),
    temperature: fc.double({ min: 0, max: 2, noNaN: true }),
    top_p: fc.double({ min: 0, max: 1, noNaN: true }),
    max_tokens: fc.integer({ min: 1, max: 4096 }),
    stream: fc.boolean(),
    stream_options: fc.record({ include_usage: fc.boolean() }),
    user: fc.string({ maxLength: 12 }),
  },
  { requiredKeys: ['model', 'messages'] },
)

const VALID = JSON.stringify({ model: 'local/echo', messages: [{ role: 'user', content: 'hello' }] })

/** Body texts: request-shaped, any JSON, cut JSON, deep nesting, duplicate keys, non-JSON. */
const bodyText = fc.oneof(
  { weight: 4, arbitrary: wellFormed.map((body) => JSON.stringify(body)) },
  { weight: 5, arbitrary: chatObject.map((body) => JSON.stringify(body)) },
  { weight: 2, arbitrary: anyJson.map((value) => JSON.stringify(value)) },
  fc.tuple(chatObject, fc.nat()).map(([body, cut]) => {
    const text = JSON.stringify(body)
    return text.slice(0, cut % (text.length + 1))
  }),
  fc
    .tuple(fc.integer({ min: 1, max: 300 }), fc.constantFrom('[', '{"a":'))
    .map(([depth, open]) =>
      open === '['
        ? `{"model":"local/echo","messages":[{"role":"user","content":"x"}],"x":${'['.repeat(depth)}${']'.repeat(depth)}}`
        : `${open.repeat(depth)}1${'}'.repeat(depth)}`,
    ),
  fc.constantFrom(
    '{"model":"local/echo","messages":[{"role":"user","content":"x"}],"model":"local/echo"}',
    '{"model":"local/echo","messages":[{"role":"user","content":"x"}],"mo\\u0064el":"x"}',
    '{"model":"local/echo","messages":[{"role":"user","content":"x"}],"messages":[]}',
    VALID,
    '',
    ' ',
    'null',
    '"\\ud800"',
    '{"model":"local/echo","messages":[{"role":"user","content":"\\ud800"}]}',
  ),
  fc.string({ unit: 'binary', maxLength: 200 }),
)

const contentType = fc.oneof(
  { weight: 8, arbitrary: fc.constant('application/json') },
  fc.constantFrom(
    'application/json; charset=utf-8',
    'APPLICATION/JSON',
    'application/vnd.api+json',
    'application/jsonx',
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    '',
  ),
  headerText(),
)

type HeaderSet = Record<string, string>

const authorization = fc.oneof(
  { weight: 12, arbitrary: fc.constant<HeaderSet>({ authorization: 'Bearer VALID' }) },
  fc.constantFrom<HeaderSet>(
    {},
    { authorization: 'Bearer ADMIN' },
    { 'x-api-key': 'VALID' },
    { 'x-api-key': 'ADMIN' },
    { authorization: 'bearer VALID' },
    { authorization: 'Bearer  VALID ' },
    { authorization: 'Basic VALID' },
    { authorization: 'Bearer' },
    { authorization: 'Bearer sk-cg-0000000000000000000000000000000000000000' },
  ),
  headerText().map((value): HeaderSet => ({ authorization: value })),
  headerText().map((value): HeaderSet => ({ authorization: `Bearer ${value}` })),
)

/** Headers the gateway reads or might trip on, with random values. */
const extraHeaders = fc.dictionary(
  fc.constantFrom('x-request-id', 'accept', 'accept-encoding', 'x-forwarded-for', 'origin', 'content-encoding', 'expect', 'x-svc-tier'),
  headerText(200),
  { maxKeys: 3 },
)

const SEGMENTS = [
  '..',
  '.',
  '%',
  '%2e',
  '%2e%2e',
  '%2F',
  '%00',
  '%E0%A4%A',
  '%zz',
  '%ff',
  'constructor',
  '__proto__',
  'toString',
  'local',
  'echo',
  '',
  '~',
  ';',
  '%20',
]

const segment = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...SEGMENTS) },
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 8 }),
  fc.string({ unit: 'binary-ascii', maxLength: 8 }),
  fc.integer({ min: 100, max: 8_000 }).map((n) => 'a'.repeat(n)),
  fc.constant('SPARE'),
)

const PREFIXES = [
  '',
  '/',
  '/v1',
  '/v1/chat/completions',
  '/v1/models',
  '/v1/models/local',
  '/v1/usage',
  '/admin',
  '/admin/keys',
  '/admin/aliases',
  '/admin/tiers',
  '/admin/upstreams',
  '/admin/usage',
  '/swagger',
  '/swagger/assets',
  '/swagger/json',
  '/dashboard',
  '/dashboard/assets',
  '/health',
  '/metrics',
]

const path = fc
  .tuple(fc.constantFrom(...PREFIXES), fc.array(segment, { maxLength: 3 }), sometimes(fc.string({ maxLength: 20 })))
  .map(([prefix, segments, query]) => `${prefix}${segments.map((s) => `/${s}`).join('')}${query === undefined ? '' : `?${query}`}`)

/** Numbers for the key fields: in range, at and past the bounds, and not numbers at all. */
const keyNumber = fc.oneof(
  { weight: 2, arbitrary: fc.integer({ min: 1, max: 100_000 }) },
  { weight: 3, arbitrary: fc.constantFrom(0, -1, 1.5, 36_500, 36_501, 100_000_000, 1e12, 1e12 + 1, 2 ** 53, 2 ** 53 + 2, 1e21, 1e300, -1e300) },
  fc.constant(null),
  anyJson,
)

const KEY_NUMBERS = ['expires_in_days', 'rpm', 'tpm', 'max_concurrent', 'monthly_token_quota', 'daily_request_quota'] as const

/** Bodies for POST /admin/keys and PATCH /admin/keys/{id}: a valid name and tier, with one to three random numbers; sometimes a field of the wrong type. */
const keyBody = fc
  .tuple(
    fc.string({ minLength: 1, maxLength: 20 }).filter((name) => name.trim().length > 0),
    fc.dictionary(fc.constantFrom(...KEY_NUMBERS), keyNumber, { minKeys: 1, maxKeys: 3 }),
    sometimes(fc.tuple(fc.constantFrom('name', 'tier', 'extra'), anyJson)),
  )
  .map(([name, numbers, odd]) => ({ name, tier: 'main', ...numbers, ...(odd ? { [odd[0]]: odd[1] } : {}) }))

const method = fc.oneof({ weight: 3, arbitrary: fc.constant('POST') }, fc.constantFrom('GET', 'PATCH', 'DELETE', 'PUT', 'OPTIONS', 'HEAD'))

// ---- the property ----

interface Sent {
  method: string
  path: string
  headers: Record<string, string>
  body?: string
}

const resolveSecrets = (value: string) => value.replaceAll('VALID', key).replaceAll('ADMIN', ADMIN_KEY).replaceAll('SPARE', spareId)

/** Statuses seen, to show the generators reach both answers and refusals. */
const seen = new Map<number, number>()
let skipped = 0

/** Sends one request; returns a description of what is wrong with the answer, or null. */
async function check(sent: Sent): Promise<string | null> {
  // Appended to the origin, never resolved against it: "//x" is a path here, not another host.
  let url: URL | null = null
  try {
    url = new URL(`${gateway.url}${resolveSecrets(sent.path)}`)
  } catch {
    // not a URL fetch could send
  }
  if (url === null || url.origin !== gateway.url) {
    skipped++
    return null
  }
  const headers = Object.fromEntries(Object.entries(sent.headers).map(([name, value]) => [name, resolveSecrets(value)]))
  const withBody = sent.body !== undefined && sent.method !== 'GET' && sent.method !== 'HEAD'
  const response = await fetch(url, { method: sent.method, headers, body: withBody ? sent.body : undefined, redirect: 'manual' })
  const text = await response.text()
  seen.set(response.status, (seen.get(response.status) ?? 0) + 1)
  const what = `${sent.method} ${url.href} -> ${response.status} ${text.slice(0, 300)}`
  if (response.status >= 500) return `5xx: ${what}`
  if (response.status >= 400 && sent.method !== 'HEAD') {
    let body: { error?: { message?: unknown; type?: unknown } }
    try {
      body = JSON.parse(text) as typeof body
    } catch {
      return `4xx without a JSON body: ${what}`
    }
    if (typeof body?.error?.message !== 'string' || typeof body.error.type !== 'string') return `4xx without error.message and error.type: ${what}`
  }
  return null
}

const property = (arb: fc.Arbitrary<Sent>) =>
  fc.asyncProperty(arb, async (sent) => {
    const problem = await check(sent)
    if (problem !== null) throw new Error(problem)
  })

describe('fuzz: random requests never get a 5xx, and every 4xx is a JSON error', () => {
  test('random chat bodies with random content types and keys, on POST /v1/chat/completions (200 runs)', async () => {
    const arb = fc.record({
      method: fc.constant('POST'),
      path: fc.constant('/v1/chat/completions'),
      headers: fc.tuple(contentType, authorization, extraHeaders).map(([type, auth, extra]) => ({ ...extra, 'content-type': type, ...auth })),
      body: bodyText,
    })
    await fc.assert(property(arb), { seed: SEED, numRuns: 200, endOnFailure: true })
  })

  test('random paths, methods and headers, with and without bodies (200 runs)', async () => {
    const arb = fc.record({
      method,
      path,
      headers: fc
        .tuple(sometimes(contentType), authorization, extraHeaders)
        .map(([type, auth, extra]) => ({ ...extra, ...(type === undefined ? {} : { 'content-type': type }), ...auth })),
      body: sometimes(bodyText),
    })
    await fc.assert(property(arb), { seed: SEED + 1, numRuns: 200, endOnFailure: true })
  })

  test('random key creations and changes on the admin API: never a 5xx, and listing keys still answers 200 after each (100 runs)', async () => {
    const arb = fc.record({
      method: fc.constantFrom('POST', 'PATCH'),
      path: fc.constant(''),
      headers: fc.constant({ 'content-type': 'application/json', authorization: 'Bearer ADMIN' }),
      body: keyBody.map((body) => JSON.stringify(body)),
    })
    const admin = { authorization: `Bearer ${ADMIN_KEY}` }
    const changes = fc.asyncProperty(arb, async (sent) => {
      const problem = await check({ ...sent, path: sent.method === 'POST' ? '/admin/keys' : '/admin/keys/SPARE' })
      if (problem !== null) throw new Error(problem)
      // A change the API accepted must leave every key readable.
      for (const path of ['/admin/keys', `/admin/keys/${spareId}`]) {
        const response = await fetch(`${gateway.url}${path}`, { headers: admin })
        const text = await response.text()
        if (response.status !== 200) throw new Error(`after ${sent.method} ${sent.body}: GET ${path} -> ${response.status} ${text.slice(0, 300)}`)
      }
    })
    await fc.assert(changes, { seed: SEED + 2, numRuns: 100, endOnFailure: true })
  })

  test('the gateway is still healthy and the valid key still works; the runs reached completions as well as refusals', async () => {
    const histogram = JSON.stringify([...seen].sort((x, y) => x[0] - y[0]))
    expect(`${histogram} skipped ${skipped}`).toMatch(/\[200,\d+\].*\[400,\d+\].*\[404,\d+\]/)
    expect(seen.get(200) ?? 0).toBeGreaterThanOrEqual(20)
    expect((await fetch(`${gateway.url}/health`)).status).toBe(200)
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: VALID,
    })
    expect(response.status).toBe(200)
  })
})
