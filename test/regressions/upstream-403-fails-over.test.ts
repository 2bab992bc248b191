import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { tempDir, writeConfig } from '../support/gateway'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { type FakeUpstream, fakeUpstream, openaiCompletion, openaiStream } from '../support/upstream'

setDefaultTimeout(TEST_MS)

// An upstream 403 was relayed to the caller as the upstream's own 403 (`upstream_rejected`, its
// message kept) and never failed over, though it says the gateway's credentials lack access (OpenAI
// answers it for a key used from a country it does not serve): the next target, with other
// credentials, was never tried. Every upstream 401 or 403 is now our 502 `upstream_auth_failed`,
// never retried on the same target (whatever its max_retries), failed over to the next target, and
// the upstream's message is not passed on.

/** OpenAI's 403 for a request from a region it does not serve. */
const FORBIDDEN_MESSAGE = 'Country, region, or territory not supported'
const forbidden = () =>
  Response.json(
    { error: { message: FORBIDDEN_MESSAGE, type: 'request_forbidden', param: null, code: 'unsupported_country_region_territory' } },
    { status: 403 },
  )

// max_retries = 3 on the refusing upstreams: a 403 must not be tried again all the same. `gated` opens
// its circuit after two failures, for longer than the test runs.
const config = (refusing: string, alone: string, gated: string, fine: string) => `
[tiers.pro]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 100

[upstreams.refusing]
kind = "openai"
base_url = "${refusing}"
api_key_env = "FAKE_UPSTREAM_KEY"
max_retries = 3

[upstreams.alone]
kind = "openai"
base_url = "${alone}"
api_key_env = "FAKE_UPSTREAM_KEY"
max_retries = 3

[upstreams.gated]
kind = "openai"
base_url = "${gated}"
api_key_env = "FAKE_UPSTREAM_KEY"
max_retries = 3
failure_threshold = 2
cooldown_ms = 600000

[upstreams.fine]
kind = "openai"
base_url = "${fine}"
api_key_env = "FAKE_UPSTREAM_KEY"
max_retries = 0

[aliases."team/fast"]
targets = [{ upstream = "refusing", model = "gpt-fake" }, { upstream = "fine", model = "gpt-fake" }]

[aliases."team/gated"]
targets = [{ upstream = "gated", model = "gpt-fake" }, { upstream = "fine", model = "gpt-fake" }]

[aliases."team/alone"]
targets = [{ upstream = "alone", model = "gpt-fake" }]
`

describe('an upstream 403 fails over to the next target', () => {
  const dir = tempDir()
  let refusing: FakeUpstream
  let alone: FakeUpstream
  let gated: FakeUpstream
  let fine: FakeUpstream
  let gateway: GatewayProcess
  let key: string

  setup(async () => {
    refusing = fakeUpstream(forbidden)
    alone = fakeUpstream(forbidden)
    gated = fakeUpstream(forbidden)
    fine = fakeUpstream((request) => (request.body.stream === true ? openaiStream('gpt-fake', ['from', ' fine']) : openaiCompletion('gpt-fake', 'from fine')))
    const configPath = writeConfig(dir.path, config(refusing.url, alone.url, gated.url, fine.url))
    gateway = await spawnGateway(
      { GATEWAY_DB: join(dir.path, 'gateway.sqlite'), GATEWAY_CONFIG: configPath, FAKE_UPSTREAM_KEY: 'sk-fake' },
      { expectFirstKey: true },
    )
    key = gateway.firstKey!
  })
  teardown(async () => {
    await gateway?.stop()
    for (const upstream of [refusing, alone, gated, fine]) upstream?.stop()
    dir[Symbol.dispose]()
  })

  const chat = (model: string, extra: Record<string, unknown> = {}) =>
    fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hello' }], ...extra }),
    })

  test('the second target serves: 200, two attempts, the refusing target asked once', async () => {
    const before = { refusing: refusing.requests.length, fine: fine.requests.length }
    const response = await chat('team/fast')
    const body = (await response.json()) as { choices: { message: { content: string } }[] }
    expect({
      status: response.status,
      upstream: response.headers.get('x-svc-upstream'),
      attempts: response.headers.get('x-svc-attempts'),
      content: body.choices[0]?.message.content,
    }).toEqual({ status: 200, upstream: 'fine', attempts: '2', content: 'from fine' })
    expect({ refusing: refusing.requests.length - before.refusing, fine: fine.requests.length - before.fine }).toEqual({ refusing: 1, fine: 1 })
  })

  test('streamed too: the failover happens before the first byte', async () => {
    const before = refusing.requests.length
    const response = await chat('team/fast', { stream: true })
    const text = await response.text()
    expect({ status: response.status, upstream: response.headers.get('x-svc-upstream'), attempts: response.headers.get('x-svc-attempts') }).toEqual({
      status: 200,
      upstream: 'fine',
      attempts: '2',
    })
    expect(text).toContain('data: [DONE]')
    expect(refusing.requests.length - before).toBe(1)
  })

  test("each 403 counts against the target's circuit: once open, the target is skipped", async () => {
    const attempts: (string | null)[] = []
    for (let i = 0; i < 3; i++) {
      const response = await chat('team/gated')
      await response.text()
      expect({ status: response.status, upstream: response.headers.get('x-svc-upstream') }).toEqual({ status: 200, upstream: 'fine' })
      attempts.push(response.headers.get('x-svc-attempts'))
    }
    // failure_threshold = 2: two refusals open the circuit, and the third request goes straight to the next target.
    expect({ attempts, gated: gated.requests.length }).toEqual({ attempts: ['2', '2', '1'], gated: 2 })
  })

  test("a single target: 502 upstream_auth_failed, asked once, without the upstream's message", async () => {
    const before = alone.requests.length
    const response = await chat('team/alone')
    const text = await response.text()
    const body = JSON.parse(text) as { error: { type: string; code: string; message: string } }
    expect({ status: response.status, type: body.error.type, code: body.error.code, attempts: response.headers.get('x-svc-attempts') }).toEqual({
      status: 502,
      type: 'upstream_error',
      code: 'upstream_auth_failed',
      attempts: '1',
    })
    expect(alone.requests.length - before).toBe(1)
    expect(text).not.toContain(FORBIDDEN_MESSAGE)
    expect(text).not.toContain('unsupported_country_region_territory')
  })
})
