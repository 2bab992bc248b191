/**
 * What the request log keeps of bodies, on a real gateway: per `[request_log] bodies` and its tier
 * overrides, cut at `max_body_bytes` with a marker, redacted; a stream's answer assembled from its
 * events. And what never reaches the store: the caller's key, the upstream's secret, a redacted
 * field, a key in a URL (every file beside the database is searched).
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir, writeConfig } from '../support/gateway'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { fakeUpstream, type FakeUpstream, openaiCompletion, openaiStream } from '../support/upstream'
import { ADMIN_KEY, createKey, everyRecord, MOCK, post, recordOf } from './support'

setDefaultTimeout(TEST_MS)

const UPSTREAM_SECRET = `upstream-secret-${crypto.randomUUID()}`
const REDACTED_VALUE = `redacted-value-${crypto.randomUUID()}`
const URL_KEY = `url-key-${crypto.randomUUID()}`
const URL_PASSWORD = `url-password-${crypto.randomUUID()}`
const MAX_BODY_BYTES = 1024

const dir = tempDir()
let gateway: GatewayProcess
let upstream: FakeUpstream
let verbose: { key: string; id: string }
let errorsOnly: { key: string; id: string }
let quiet: { key: string; id: string }

setup(async () => {
  upstream = fakeUpstream((request) => {
    if (request.body.model === 'refuse-me') return Response.json({ error: { message: 'no such thing', type: 'invalid_request_error' } }, { status: 400 })
    const text = 'Fine, thanks'
    return request.body.stream ? openaiStream(String(request.body.model), ['Fine', ',', ' thanks']) : openaiCompletion(String(request.body.model), text)
  })
  const tier = (name: string, bodies?: string) => `
[tiers.${name}]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 100
${bodies ? `[tiers.${name}.request_log]\nbodies = "${bodies}"\n` : ''}`
  const config = `${tier('verbose', 'all')}${tier('errors')}${tier('quiet', 'off')}${MOCK}
[upstreams.fake]
kind = "openai"
base_url = "${upstream.url}"
api_key_env = "FAKE_UPSTREAM_KEY"

[aliases."fake/model"]
targets = [{ upstream = "fake", model = "gpt-4o" }]

[aliases."fake/refusing"]
targets = [{ upstream = "fake", model = "refuse-me" }]

[request_log]
bodies = "errors"
max_body_bytes = ${MAX_BODY_BYTES}
redact = ["metadata.secret", "tools.*.function.description"]
`
  gateway = await spawnGateway({
    GATEWAY_DB: join(dir.path, 'gateway.sqlite'),
    GATEWAY_CONFIG: writeConfig(dir.path, config),
    GATEWAY_ADMIN_KEY: ADMIN_KEY,
    FAKE_UPSTREAM_KEY: UPSTREAM_SECRET,
  })
  verbose = await createKey(gateway.url, 'verbose')
  errorsOnly = await createKey(gateway.url, 'errors')
  quiet = await createKey(gateway.url, 'quiet')
})

teardown(async () => {
  await gateway.stop()
  upstream.stop()
  dir[Symbol.dispose]()
})

const rid = (name: string) => `${name}-${crypto.randomUUID()}`

const secretRequest = (extra: Record<string, unknown> = {}) => ({
  model: 'fake/model',
  metadata: { secret: REDACTED_VALUE, team: 'search' },
  tools: [{ type: 'function', function: { name: 'lookup', description: REDACTED_VALUE, parameters: { type: 'object' } } }],
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'what is in this picture?' },
        { type: 'image_url', image_url: { url: `https://reader:${URL_PASSWORD}@images.example/cat.png?key=${URL_KEY}&size=large` } },
      ],
    },
  ],
  ...extra,
})

describe('bodies = "all" (a tier override)', () => {
  test('the request, redacted, and the answer are kept', async () => {
    const id = rid('all')
    const response = await post(gateway.url, '/v1/chat/completions', verbose.key, secretRequest(), { 'x-request-id': id })
    expect(response.status).toBe(200)
    const r = await recordOf(gateway.url, id)
    const sent = JSON.parse(r.request_body!)
    expect(sent.metadata).toEqual({ secret: '[redacted]', team: 'search' })
    expect(sent.tools[0].function).toEqual({ name: 'lookup', description: '[redacted]', parameters: { type: 'object' } })
    expect(sent.messages[0].content[1].image_url.url).toBe('https://%5Bredacted%5D:%5Bredacted%5D@images.example/cat.png?key=%5Bredacted%5D&size=large')
    expect(JSON.parse(r.response_body!).choices[0].message.content).toBe('Fine, thanks')
  })

  test('a stream keeps the answer assembled from its events, not the events', async () => {
    const id = rid('stream')
    const response = await post(gateway.url, '/v1/chat/completions', verbose.key, secretRequest({ stream: true }), { 'x-request-id': id })
    expect(await response.text()).toEndWith('data: [DONE]\n\n')
    const r = await recordOf(gateway.url, id)
    expect(r.response_body).not.toContain('data:')
    const answer = JSON.parse(r.response_body!)
    expect(answer).toMatchObject({
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Fine, thanks' }, finish_reason: 'stop' }],
    })
  })

  test("an Anthropic-shaped stream's answer is assembled as a message", async () => {
    const id = rid('messages-stream')
    const body = { model: 'local/echo', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'echo these words' }] }
    const response = await post(gateway.url, '/v1/messages', verbose.key, body, { 'x-request-id': id })
    expect(await response.text()).toContain('message_stop')
    const answer = JSON.parse((await recordOf(gateway.url, id)).response_body!)
    expect(answer).toMatchObject({ type: 'message', role: 'assistant', content: [{ type: 'text', text: 'echo these words' }] })
    expect(answer.stop_reason).toBeString()
  })

  test('a body over max_body_bytes is cut there, with a marker', async () => {
    const id = rid('long')
    const long = 'é'.repeat(3000)
    await post(gateway.url, '/v1/chat/completions', verbose.key, { model: 'fake/model', messages: [{ role: 'user', content: long }] }, { 'x-request-id': id })
    const kept = (await recordOf(gateway.url, id)).request_body!
    const [head, marker] = kept.split('…[truncated: ')
    expect(Buffer.byteLength(head!)).toBeLessThanOrEqual(MAX_BODY_BYTES)
    expect(Buffer.byteLength(head!)).toBeGreaterThan(MAX_BODY_BYTES - 4)
    expect(marker).toMatch(/^\d+ bytes in all\]$/)
    expect(head).not.toContain('\uFFFD')
  })
})

describe('bodies = "errors" (the default here) and "off" (a tier override)', () => {
  test('errors: a success keeps no body; a failure keeps the request', async () => {
    const ok = rid('errors-ok')
    const failed = rid('errors-failed')
    expect((await post(gateway.url, '/v1/chat/completions', errorsOnly.key, secretRequest(), { 'x-request-id': ok })).status).toBe(200)
    const refused = await post(gateway.url, '/v1/chat/completions', errorsOnly.key, secretRequest({ model: 'fake/refusing' }), { 'x-request-id': failed })
    expect(refused.status).toBe(400)
    expect(await recordOf(gateway.url, ok)).toMatchObject({ request_body: null, response_body: null })
    const r = await recordOf(gateway.url, failed)
    expect(r).toMatchObject({ status: 400, response_body: null })
    expect(JSON.parse(r.request_body!).metadata.secret).toBe('[redacted]')
  })

  test('off: not even a failure keeps a body', async () => {
    const failed = rid('off-failed')
    await post(gateway.url, '/v1/chat/completions', quiet.key, secretRequest({ model: 'fake/refusing' }), { 'x-request-id': failed })
    expect(await recordOf(gateway.url, failed)).toMatchObject({ status: 400, request_body: null, response_body: null })
  })
})

test('the caller key, the upstream secret, a redacted field and a key in a URL never reach the store', async () => {
  // The upstream did get its secret, and the records were written (folded by this read).
  expect(upstream.requests.some((r) => r.headers.get('authorization') === `Bearer ${UPSTREAM_SECRET}`)).toBe(true)
  expect((await everyRecord(gateway.url)).length).toBeGreaterThan(5)
  const stored = readdirSync(dir.path)
    .filter((name) => name.startsWith('gateway.sqlite'))
    .map((name) => readFileSync(join(dir.path, name)).toString('latin1'))
    .join('\n')
  expect(stored).toContain('[redacted]')
  for (const secret of [verbose.key, errorsOnly.key, quiet.key, UPSTREAM_SECRET, REDACTED_VALUE, URL_KEY, URL_PASSWORD]) {
    expect(stored.includes(secret) ? `${secret} found` : 'absent').toBe('absent')
  }
})
