/**
 * kind = "azure" on a real gateway process, against the fake Azure OpenAI resource of
 * test/support/fakes/azure.ts (written from https://learn.microsoft.com/azure/ai-foundry/openai/reference
 * and the content-filter concepts page, cited there), the strict OpenAI fakes behind it, and a plain
 * OpenAI fake for fallbacks. The v1 path and the deployment path; every inbound API, JSON and
 * streamed; content-filter results passed through and mapped; errors, retries and fallbacks.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { ADMIN_KEY, createKey, usageTotals } from '../../support/cluster'
import { FAKE_AZURE_KEY, fakeAzure, type FakeAzure } from '../../support/fakes/azure'
import { fakeOpenAI, type FakeOpenAI } from '../../support/fakes/openai'
import { tempDir, writeConfig } from '../../support/gateway'
import { setup, teardown, TEST_MS } from '../../support/hooks'
import { type GatewayProcess, spawnGateway } from '../../support/process'
import { OPEN_TIER } from '../../responses/helpers'
import { answer, chatStream, events, type Json, post } from '../bedrock/helpers'

setDefaultTimeout(TEST_MS)

const config = (endpoint: string, openai: string) => `
${OPEN_TIER}
[upstreams.az]
kind = "azure"
endpoint = "${endpoint}"
api_key_env = "AZ_KEY"
responses = "native"
max_retries = 1

[upstreams.az_dep]
kind = "azure"
endpoint = "${endpoint}"
api_key_env = "AZ_KEY"
api_version = "2024-10-21"

[upstreams.az_bad]
kind = "azure"
endpoint = "${endpoint}"
api_key_env = "AZ_WRONG"
max_retries = 3

[upstreams.openai]
kind = "openai"
base_url = "${openai}"
api_key_env = "FAKE_OPENAI_KEY"

[aliases."az/gpt"]
targets = [{ upstream = "az", model = "gpt-4o-prod", price = { input = 2.5, output = 10 } }]

# A 429 rests its target (upstream and model): the throttling cases have a target of their own.
[aliases."az/limited"]
targets = [{ upstream = "az", model = "gpt-4o-limited" }]

[aliases."az/dep"]
targets = [{ upstream = "az_dep", model = "gpt-4o-prod" }]

[aliases."az/embed"]
targets = [{ upstream = "az", model = "embed-prod" }]

[aliases."az/dep-embed"]
targets = [{ upstream = "az_dep", model = "embed-prod" }]

[aliases."az/bad"]
targets = [{ upstream = "az_bad", model = "gpt-4o-prod" }]

[aliases."az/fallback"]
targets = [{ upstream = "az_bad", model = "gpt-4o-prod" }, { upstream = "openai", model = "gpt-4o" }]

[aliases."az/mixed"]
targets = [{ upstream = "az", model = "gpt-4o-prod" }, { upstream = "openai", model = "gpt-4o" }]
`

const dir = tempDir()
let gateway: GatewayProcess
let azure: FakeAzure
let openai: FakeOpenAI
let key: string
const seen = new Set<string>()

/** Failures the tests ask for, by a marker in the request's text (Azure's 429 says its wait in retry-after-ms). */
function refuse(call: { text: string }): Response | null {
  const throttled = () =>
    Response.json(
      { error: { code: '429', message: 'Requests to the ChatCompletions_Create Operation have exceeded the token rate limit of your current tier.' } },
      { status: 429, headers: { 'retry-after-ms': '30', 'retry-after': '1' } },
    )
  if (call.text.includes('[[throttle]]')) return throttled()
  const once = /\[\[throttle-once:(\w+)\]\]/.exec(call.text)?.[1]
  if (once && !seen.has(once)) {
    seen.add(once)
    return throttled()
  }
  if (call.text.includes('[[azure-down]]'))
    return Response.json({ error: { code: 'InternalServerError', message: 'The server had an error.' } }, { status: 500 })
  return null
}

setup(async () => {
  azure = fakeAzure({ refuse })
  openai = fakeOpenAI()
  gateway = await spawnGateway({
    GATEWAY_DB: `${dir.path}/gateway.sqlite`,
    GATEWAY_CONFIG: writeConfig(dir.path, config(azure.endpoint, openai.url)),
    GATEWAY_ADMIN_KEY: ADMIN_KEY,
    AZ_KEY: FAKE_AZURE_KEY,
    AZ_WRONG: 'not-the-key',
    FAKE_OPENAI_KEY: 'sk-openai-fake',
  })
  key = (await createKey(gateway.url, { name: 'azure', tier: 'open' })).key
})

teardown(async () => {
  await gateway.stop()
  azure.stop()
  openai.stop()
  dir[Symbol.dispose]()
})

const chat = (body: Json) => post(gateway.url, key, '/v1/chat/completions', body)
const user = (content: string) => [{ role: 'user', content }]
const WEATHER = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }

describe('chat completions', () => {
  test('the v1 path: api-key, the caller body with only the model replaced, content-filter results passed through, usage exact', async () => {
    const sent = JSON.stringify({ model: 'az/gpt', messages: user('hello azure'), seed: 7, temperature: 0.3 })
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: sent,
    })
    const { status, body, upstream } = await answer(response)
    expect([status, upstream]).toEqual([200, 'az'])
    const call = azure.calls.at(-1)!
    expect([call.path, call.search, call.headers.get('api-key'), call.headers.get('authorization')]).toEqual([
      '/openai/v1/chat/completions',
      '',
      FAKE_AZURE_KEY,
      null,
    ])
    expect(call.text).toBe(sent.replace('"az/gpt"', '"gpt-4o-prod"'))
    expect(body.prompt_filter_results[0].content_filter_results.hate).toEqual({ filtered: false, severity: 'safe' })
    expect(body.choices[0].content_filter_results.violence.filtered).toBe(false)
    expect(body.model).toBe('az/gpt')
    expect(body.usage).toEqual(azure.chat.completions.at(-1).usage)
  })

  test("streamed: Azure's first, choiceless chunk of prompt filter results passes through; the usage chunk", async () => {
    const list = await events(await chat({ model: 'az/gpt', messages: user('stream azure'), stream: true, stream_options: { include_usage: true } }))
    expect(list[0]!.data.prompt_filter_results).toHaveLength(1)
    const stream = chatStream(list)
    expect(stream).toMatchObject({ content: 'chatgate-azure-final heard: stream azure', finish: 'stop', error: null })
    expect(stream.usage).toEqual(azure.chat.completions.at(-1).usage)
  })

  test('the deployment path with api-version, for chat and embeddings', async () => {
    expect((await answer(await chat({ model: 'az/dep', messages: user('by deployment') }))).status).toBe(200)
    expect([azure.calls.at(-1)!.path, azure.calls.at(-1)!.search]).toEqual(['/openai/deployments/gpt-4o-prod/chat/completions', '?api-version=2024-10-21'])
    const embedded = await answer(await post(gateway.url, key, '/v1/embeddings', { model: 'az/dep-embed', input: ['a', 'bb'], dimensions: 4 }))
    expect([embedded.status, embedded.body.data.length, embedded.body.data[0].embedding.length, embedded.body.model]).toEqual([200, 2, 4, 'az/dep-embed'])
    expect(azure.calls.at(-1)!.path).toBe('/openai/deployments/embed-prod/embeddings')
    const v1 = await answer(await post(gateway.url, key, '/v1/embeddings', { model: 'az/embed', input: 'c' }))
    expect([v1.status, azure.calls.at(-1)!.path, azure.calls.at(-1)!.body.model]).toEqual([200, '/openai/v1/embeddings', 'embed-prod'])
  })

  test('a tool loop', async () => {
    const first = await answer(await chat({ model: 'az/dep', messages: user('Weather?'), tools: [WEATHER] }))
    const call = first.body.choices[0].message.tool_calls[0]
    const messages = [...user('Weather?'), { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: call.id, content: 'mild' }]
    const second = await answer(await chat({ model: 'az/dep', messages, tools: [WEATHER] }))
    expect(second.body.choices[0].message.content).toContain('the tool said: mild')
  })
})

describe('messages, responses, count_tokens', () => {
  test('/v1/messages, JSON and streamed', async () => {
    const json = await answer(await post(gateway.url, key, '/v1/messages', { model: 'az/gpt', max_tokens: 100, messages: user('messages to azure') }))
    expect(json.body.content[0].text).toBe('chatgate-azure-final heard: messages to azure')
    const list = await events(await post(gateway.url, key, '/v1/messages', { model: 'az/gpt', max_tokens: 100, messages: user('streamed'), stream: true }))
    expect(list.at(-1)!.event).toBe('message_stop')
  })

  test('/v1/responses: native at /openai/v1/responses (JSON, streamed), translated on the deployment path', async () => {
    const native = await answer(await post(gateway.url, key, '/v1/responses', { model: 'az/gpt', input: 'native please' }))
    expect([native.status, azure.calls.at(-1)!.path, native.body.model]).toEqual([200, '/openai/v1/responses', 'az/gpt'])
    const list = await events(await post(gateway.url, key, '/v1/responses', { model: 'az/gpt', input: 'native stream', stream: true }))
    expect(list.at(-1)!.data.type).toBe('response.completed')
    const fetched = await fetch(`${gateway.url}/v1/responses/${native.body.id}`, { headers: { authorization: `Bearer ${key}` } })
    expect(fetched.status).toBe(200)
    expect(azure.calls.at(-1)!.path).toBe(`/openai/v1/responses/${native.body.id}`)
    const translated = await answer(await post(gateway.url, key, '/v1/responses', { model: 'az/dep', input: 'translated', store: false }))
    expect([translated.status, azure.calls.at(-1)!.path]).toEqual([200, '/openai/deployments/gpt-4o-prod/chat/completions'])
  })

  test('count_tokens with the local tokenizer, no call upstream', async () => {
    const before = azure.calls.length
    const counted = await answer(await post(gateway.url, key, '/v1/messages/count_tokens', { model: 'az/gpt', messages: user('count these words') }))
    expect(counted.body.input_tokens).toBeGreaterThan(0)
    expect(azure.calls.length).toBe(before)
  })
})

describe('the content filter', () => {
  test("a prompt refused: Azure's 400 keeps code content_filter, in each dialect", async () => {
    const chatRefusal = await answer(await chat({ model: 'az/gpt', messages: user('[[filtered]]') }))
    expect([chatRefusal.status, chatRefusal.body.error.code, chatRefusal.body.error.type]).toEqual([400, 'content_filter', 'invalid_request_error'])
    const messages = await answer(await post(gateway.url, key, '/v1/messages', { model: 'az/gpt', max_tokens: 10, messages: user('[[filtered]]') }))
    expect([messages.status, messages.body.type, messages.body.error.type]).toEqual([400, 'error', 'invalid_request_error'])
  })

  test('an answer stopped by the filter: chat content_filter (passed through), messages refusal, responses incomplete', async () => {
    const json = await answer(await chat({ model: 'az/dep', messages: user('[[filter-output]]') }))
    expect([json.body.choices[0].finish_reason, json.body.choices[0].content_filter_results.violence.filtered]).toEqual(['content_filter', true])
    expect(chatStream(await events(await chat({ model: 'az/dep', messages: user('[[filter-output]]'), stream: true }))).finish).toBe('content_filter')
    const messages = await answer(await post(gateway.url, key, '/v1/messages', { model: 'az/dep', max_tokens: 10, messages: user('[[filter-output]]') }))
    expect(messages.body.stop_reason).toBe('refusal')
    const stream = await events(
      await post(gateway.url, key, '/v1/messages', { model: 'az/dep', max_tokens: 10, messages: user('[[filter-output]]'), stream: true }),
    )
    expect(stream.find((e) => e.event === 'message_delta')!.data.delta.stop_reason).toBe('refusal')
    const responses = await answer(await post(gateway.url, key, '/v1/responses', { model: 'az/dep', input: '[[filter-output]]', store: false }))
    expect([responses.body.status, responses.body.incomplete_details]).toEqual(['incomplete', { reason: 'content_filter' }])
  })
})

describe('errors, retries and fallbacks', () => {
  test('429: retried after retry-after-ms on the same target; when it persists, 429 with Retry-After', async () => {
    const retried = await answer(await chat({ model: 'az/limited', messages: user('[[throttle-once:x]] hi') }))
    expect([retried.status, retried.attempts]).toEqual([200, '2'])
    const throttled = await answer(await chat({ model: 'az/limited', messages: user('[[throttle]]') }))
    expect([throttled.status, throttled.body.error.code, throttled.retryAfter]).toEqual([429, 'upstream_rate_limited', '1'])
  })

  test('a wrong key: 401, never retried on the target, 502; the alias fails over to OpenAI', async () => {
    const before = azure.calls.length
    const bad = await answer(await chat({ model: 'az/bad', messages: user('wrong key') }))
    expect([bad.status, bad.body.error.code, bad.attempts, azure.calls.length - before]).toEqual([502, 'upstream_auth_failed', '1', 1])
    const fallback = await answer(await chat({ model: 'az/fallback', messages: user('wrong key, then openai') }))
    expect([fallback.status, fallback.upstream]).toEqual([200, 'openai'])
  })

  test('mid-conversation with tool calls: Azure serves the call, OpenAI the answer when Azure fails', async () => {
    const first = await answer(await chat({ model: 'az/mixed', messages: user('Weather?'), tools: [WEATHER] }))
    expect(first.upstream).toBe('az')
    const call = first.body.choices[0].message.tool_calls[0]
    const messages = [
      ...user('Weather?'),
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: call.id, content: 'windy [[azure-down]]' },
    ]
    const second = await answer(await chat({ model: 'az/mixed', messages, tools: [WEATHER] }))
    expect([second.status, second.upstream]).toEqual([200, 'openai'])
    expect(second.body.choices[0].message.content).toContain('windy [[azure-down]]')
  })

  test('usage and spend: the deployment priced by its target', async () => {
    const before = await usageTotals(gateway.url)
    const { body } = await answer(await chat({ model: 'az/gpt', messages: user('priced') }))
    const after = await usageTotals(gateway.url)
    expect(after.prompt_tokens - before.prompt_tokens).toBe(body.usage.prompt_tokens)
    expect(after.cost_usd - before.cost_usd).toBeCloseTo((body.usage.prompt_tokens * 2.5 + body.usage.completion_tokens * 10) / 1e6, 9)
  })
})
