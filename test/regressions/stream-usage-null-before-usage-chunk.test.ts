import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { fakeAnthropic, type FakeAnthropic } from '../support/fakes/anthropic'
import { tempDir, writeConfig } from '../support/gateway'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { type FakeUpstream, fakeUpstream, openaiStream } from '../support/upstream'
import { SETUP_MS, setup, teardown, TEARDOWN_MS, TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

const ANTHROPIC_KEY = 'sk-ant-fake-for-usage-null'

// Issue 33, point 2: with `stream_options.include_usage`, OpenAI's streaming reference says every
// chunk before the last carries `"usage": null` (https://platform.openai.com/docs/api-reference/chat/streaming,
// "usage ... When present, it contains a null value except for the last chunk"). Streams translated
// from Anthropic, from the mock, and passed through from OpenAI-compatible servers that leave the
// member out (vLLM, llama.cpp) went to the caller without it; strict clients and schema validators
// failed on them. Every route now writes it, and only when the caller asked for usage.

/** An OpenAI-compatible server that omits `usage` from its content chunks, as several do. */
function usageOmittingUpstream(): FakeUpstream {
  return fakeUpstream(() => {
    const base = { id: 'chatcmpl-omits', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'gpt-omits' }
    const chunks = [
      { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] },
      { ...base, choices: [{ index: 0, delta: { content: 'Hello' }, finish_reason: null }] },
      { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
      { ...base, choices: [], usage: { prompt_tokens: 4, completion_tokens: 1, total_tokens: 5 } },
    ]
    const body = chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('') + 'data: [DONE]\n\n'
    return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
  })
}

const config = (omitting: string, writing: string, anthropic: string) => `
[tiers.pro]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 100

[upstreams.omits]
kind = "openai"
base_url = "${omitting}"
api_key_env = "FAKE_UPSTREAM_KEY"

[upstreams.writes]
kind = "openai"
base_url = "${writing}"
api_key_env = "FAKE_UPSTREAM_KEY"

[upstreams.an]
kind = "anthropic"
base_url = "${anthropic}"
api_key_env = "FAKE_ANTHROPIC_KEY"

[upstreams.mock]
kind = "mock"

[aliases."t/mock"]
targets = [{ upstream = "mock", model = "echo" }]

[aliases."t/omits"]
targets = [{ upstream = "omits", model = "gpt-omits" }]

[aliases."t/writes"]
targets = [{ upstream = "writes", model = "gpt-writes" }]

[aliases."t/anthropic"]
targets = [{ upstream = "an", model = "claude-fake" }]
`

const chunksOf = (text: string) =>
  text
    .split('\n\n')
    .map((block) => /^data: (.*)$/m.exec(block)?.[1])
    .filter((data): data is string => data !== undefined && data !== '[DONE]')
    .map((data) => JSON.parse(data) as Record<string, unknown>)

describe('usage is null in every chunk before the usage chunk, on every route', () => {
  const dir = tempDir()
  let omitting: FakeUpstream
  let writing: FakeUpstream
  let anthropic: FakeAnthropic
  let gateway: GatewayProcess

  setup(async () => {
    omitting = usageOmittingUpstream()
    writing = fakeUpstream(() => openaiStream('gpt-writes', ['Hel', 'lo']))
    anthropic = fakeAnthropic({ apiKey: ANTHROPIC_KEY })
    const path = writeConfig(dir.path, config(omitting.url, writing.url, anthropic.url))
    gateway = await spawnGateway(
      { GATEWAY_DB: join(dir.path, 'gateway.sqlite'), GATEWAY_CONFIG: path, FAKE_UPSTREAM_KEY: 'sk-fake', FAKE_ANTHROPIC_KEY: ANTHROPIC_KEY },
      { expectFirstKey: true },
    )
  }, SETUP_MS)
  teardown(async () => {
    await gateway?.stop()
    omitting?.stop()
    writing?.stop()
    anthropic?.stop()
    dir[Symbol.dispose]()
  }, TEARDOWN_MS)

  const stream = async (model: string, includeUsage: boolean) => {
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gateway.firstKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
        ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
      }),
    })
    expect(response.status).toBe(200)
    return chunksOf(await response.text())
  }

  for (const model of ['t/omits', 't/writes', 't/anthropic', 't/mock']) {
    test(`${model}: asked for usage, every chunk but the last says "usage": null; the last carries the counts`, async () => {
      const chunks = await stream(model, true)
      expect(chunks.length).toBeGreaterThan(1)
      const last = chunks.at(-1)!
      expect(last.choices).toEqual([])
      expect(last.usage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) })
      for (const chunk of chunks.slice(0, -1)) {
        expect(Object.hasOwn(chunk, 'usage')).toBe(true)
        expect(chunk.usage).toBeNull()
      }
    })

    test(`${model}: not asked for usage, no chunk carries a usage member`, async () => {
      const chunks = await stream(model, false)
      expect(chunks.length).toBeGreaterThan(0)
      expect(chunks.filter((chunk) => Object.hasOwn(chunk, 'usage'))).toEqual([])
    })
  }
})
