import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { tempDir, writeConfig } from '../support/gateway'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { type FakeUpstream, fakeUpstream } from '../support/upstream'

setDefaultTimeout(TEST_MS)

// The Vercel AI SDK's openai() provider stores by default, and sends the items of an earlier answer
// back as `{"type": "item_reference", "id": ...}` (https://platform.openai.com/docs/api-reference/responses/create,
// input item "Item reference"). A translated target refused them with 400 unsupported_content, so a
// second turn after any reasoning failed. The gateway now resolves a reference to an item of a
// response it holds for the same key; another key's item, or an unknown id, is still refused.

const config = (upstream: string) => `
[tiers.pro]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 100

[upstreams.chat]
kind = "openai"
base_url = "${upstream}"
api_key_env = "FAKE_UPSTREAM_KEY"

[aliases."team/thinker"]
targets = [{ upstream = "chat", model = "thinker-1" }]
`

/** A chat server that reasons (`reasoning_content`, as DeepSeek's and vLLM's do) before its answer. */
const answer = (content: string) =>
  Response.json({
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'thinker-1',
    choices: [{ index: 0, message: { role: 'assistant', content, reasoning_content: 'Let me think.' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 },
  })

describe('item_reference on a translated target', () => {
  const dir = tempDir()
  let upstream: FakeUpstream
  let gateway: GatewayProcess
  let key: string
  let otherKey: string

  setup(async () => {
    upstream = fakeUpstream(() => answer('The first answer.'))
    const configPath = writeConfig(dir.path, config(upstream.url))
    gateway = await spawnGateway(
      {
        GATEWAY_DB: join(dir.path, 'gateway.sqlite'),
        GATEWAY_CONFIG: configPath,
        FAKE_UPSTREAM_KEY: 'sk-fake',
        GATEWAY_ADMIN_KEY: 'admin-secret-key-0123456789',
      },
      { expectFirstKey: true },
    )
    key = gateway.firstKey!
    const made = await fetch(`${gateway.url}/admin/keys`, {
      method: 'POST',
      headers: { authorization: 'Bearer admin-secret-key-0123456789', 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'other', tier: 'pro' }),
    })
    otherKey = ((await made.json()) as { key: string }).key
  })
  teardown(async () => {
    await gateway?.stop()
    upstream?.stop()
    dir[Symbol.dispose]()
  })

  const respond = (as: string, input: unknown) =>
    fetch(`${gateway.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${as}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'team/thinker', input }),
    })

  test('a reference to a stored answer of the same key is resolved: the upstream gets the earlier turn', async () => {
    const first = await respond(key, 'Hello')
    expect(first.status).toBe(200)
    const output = ((await first.json()) as { output: { id: string; type: string }[] }).output
    expect(output.map((item) => item.type)).toEqual(['reasoning', 'message'])

    const before = upstream.requests.length
    const second = await respond(key, [
      { role: 'user', content: 'Hello' },
      ...output.map((item) => ({ type: 'item_reference', id: item.id })),
      { role: 'user', content: 'And again?' },
    ])
    expect({ status: second.status, body: second.status === 200 ? null : await second.text() }).toEqual({ status: 200, body: null })
    const sent = upstream.requests[before]!.body.messages as { role: string; content: unknown; reasoning_content?: string }[]
    expect(sent.map((m) => [m.role, m.content])).toEqual([
      ['user', 'Hello'],
      ['assistant', 'The first answer.'],
      ['user', 'And again?'],
    ])
  })

  test("another key's item, or an unknown one, is not resolved: 400 naming the item, nothing sent upstream", async () => {
    const first = await respond(key, 'Hello')
    const message = ((await first.json()) as { output: { id: string; type: string }[] }).output.find((item) => item.type === 'message')!
    const before = upstream.requests.length
    for (const [as, id] of [
      [otherKey, message.id],
      [key, 'msg_0000000000000000000000000000000a'],
    ] as const) {
      const refused = await respond(as, [
        { type: 'item_reference', id },
        { role: 'user', content: 'Go on' },
      ])
      const error = ((await refused.json()) as { error: { type: string; param: string } }).error
      expect({ status: refused.status, type: error.type, param: error.param }).toEqual({ status: 400, type: 'invalid_request_error', param: 'input.0.type' })
    }
    expect(upstream.requests.length).toBe(before)
  })
})
