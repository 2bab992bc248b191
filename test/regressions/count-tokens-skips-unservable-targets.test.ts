import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base'
import { ADMIN_KEY, createKey } from '../support/cluster'
import { tempDir, writeConfig } from '../support/gateway'
import { SETUP_MS, TEARDOWN_MS, TEST_MS } from '../support/hooks'
import { type GatewayProcess, spawnGateway } from '../support/process'

/**
 * Regression (issue 23, code review B3): count_tokens kept OpenAI-shaped targets without asking
 * them `cannotServe`, so a target that cannot serve the request (the mock's embeddings model)
 * counted it anyway, and its answers lacked the attempts header that every served request carries.
 * Now such targets are skipped as when serving, with the first one's reason as the 400 when none is
 * left, and the answer names the upstream, the model and the attempts.
 */
setDefaultTimeout(TEST_MS)

const config = (upstream: string) => `
[tiers.standard]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 100

[upstreams.local]
kind = "mock"

[upstreams.oa]
kind = "openai"
base_url = "${upstream}"
api_key_env = "FAKE_UPSTREAM_KEY"

[aliases."t/mixed"]
targets = [{ upstream = "local", model = "embed" }, { upstream = "oa", model = "gpt-4o" }]

[aliases."t/embed-only"]
targets = [{ upstream = "local", model = "embed" }]
`

const CONTENT = 'hello brave new world, counted by o200k'

const count = (url: string, key: string, model: string) =>
  fetch(`${url}/v1/messages/count_tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: CONTENT }] }),
  })

describe('count_tokens and the targets that cannot serve the request', () => {
  const dir = tempDir()
  // Never called: OpenAI-kind targets count locally.
  const upstream = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('not used', { status: 500 }) })
  let gw: GatewayProcess
  let key: string
  beforeAll(async () => {
    gw = await spawnGateway({
      GATEWAY_DB: `${dir.path}/gateway.sqlite`,
      GATEWAY_CONFIG: writeConfig(dir.path, config(`http://127.0.0.1:${upstream.port}/v1`)),
      GATEWAY_ADMIN_KEY: ADMIN_KEY,
      FAKE_UPSTREAM_KEY: 'sk-fake',
    })
    key = (await createKey(gw.url, { name: 'counter', tier: 'standard' })).key
  }, SETUP_MS)
  afterAll(async () => {
    await gw?.stop()
    upstream.stop(true)
    dir[Symbol.dispose]()
  }, TEARDOWN_MS)

  test('a target that cannot serve it is skipped: the next one counts, and the answer names it and its attempts', async () => {
    const response = await count(gw.url, key, 't/mixed')
    expect(response.status).toBe(200)
    expect(response.headers.get('x-svc-upstream')).toBe('oa')
    expect(response.headers.get('x-svc-model')).toBe('gpt-4o')
    expect(response.headers.get('x-svc-attempts')).toBe('1')
    // o200k's count with the chat format's overhead (3 to prime the reply, 3 per message), not the mock's words.
    expect(await response.json()).toEqual({ input_tokens: 6 + countTokens('user') + countTokens(CONTENT) })
  })

  test('with no target left, the first one’s reason is the 400', async () => {
    const response = await count(gw.url, key, 't/embed-only')
    expect(response.status).toBe(400)
    const body = (await response.json()) as { type: string; error: { type: string; message: string } }
    expect(body.error.type).toBe('invalid_request_error')
    expect(body.error.message).toContain('serves embeddings, not chat')
  })
})
