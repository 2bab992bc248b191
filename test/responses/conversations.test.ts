/**
 * Stateful and stateless Responses conversations on a real gateway process: previous_response_id
 * rebuilds the whole conversation (tool calls and reasoning included) for translated targets;
 * `store: false` keeps nothing; `include: ["reasoning.encrypted_content"]` carries Anthropic's signed
 * thinking through a stateless tool loop as Codex runs it (the fake Anthropic upstream refuses a
 * thinking block whose signature it did not issue, or a tool turn without its thinking:
 * https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking); keys see only their own
 * responses; stored responses expire after responses_ttl_days (an in-process gateway on an injected
 * clock: a spawned process has no clock to move).
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { createApp } from '../../src/app'
import { readEnv } from '../../src/config/env'
import { closeGateway, createGateway } from '../../src/gateway'
import { createLogger } from '../../src/log'
import { DAY_MS } from '../../src/time'
import { ADMIN_KEY, createKey } from '../support/cluster'
import { ANTHROPIC_MARKER, fakeAnthropic, type FakeAnthropic } from '../support/fakes/anthropic'
import { fakeOpenAI, type FakeOpenAI, OPENAI_MARKER } from '../support/fakes/openai'
import { inProcessGateway, json, tempDir, writeConfig } from '../support/gateway'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { openapiErrors } from '../support/openapi'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { created, get, OPEN_TIER, postJson, sseEvents } from './helpers'

setDefaultTimeout(TEST_MS)

type Json = Record<string, any>

const config = (chat: string, anthropic: string) => `
${OPEN_TIER}
[upstreams.local]
kind = "mock"

[upstreams.chat]
kind = "openai"
base_url = "${chat}"
api_key_env = "FAKE_OPENAI_KEY"

[upstreams.claude]
kind = "anthropic"
base_url = "${anthropic}"
api_key_env = "FAKE_ANTHROPIC_KEY"

[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]

[aliases."chat/gpt"]
targets = [{ upstream = "chat", model = "gpt-4o" }]

[aliases."claude/sonnet"]
targets = [{ upstream = "claude", model = "claude-sonnet-4-5" }]
`

const WEATHER = {
  type: 'function',
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
}

const dir = tempDir()
let gateway: GatewayProcess
let chat: FakeOpenAI
let claude: FakeAnthropic
let key: string

setup(async () => {
  chat = fakeOpenAI({ toolInput: () => ({ city: 'Boston' }) })
  claude = fakeAnthropic({ toolInput: () => ({ city: 'Paris' }) })
  gateway = await spawnGateway({
    GATEWAY_DB: `${dir.path}/gateway.sqlite`,
    GATEWAY_CONFIG: writeConfig(dir.path, config(chat.url, claude.url)),
    GATEWAY_ADMIN_KEY: ADMIN_KEY,
    FAKE_OPENAI_KEY: 'sk-openai-fake',
    FAKE_ANTHROPIC_KEY: 'sk-ant-fake',
  })
  key = (await createKey(gateway.url, { name: 'conversations', tier: 'open' })).key
})

teardown(async () => {
  await gateway.stop()
  chat.stop()
  claude.stop()
  dir[Symbol.dispose]()
})

const post = (body: unknown, as = key) => postJson(gateway.url, as, body)

/** A streamed turn as Codex reads it: the items of its output_item.done events, and the completed Response. */
async function streamedTurn(body: Json): Promise<{ items: Json[]; response: Json }> {
  const response = await post({ ...body, stream: true })
  expect(response.status).toBe(200)
  const events = sseEvents(await response.text())
  const completed = events.at(-1)!.data
  expect(completed.type).toBe('response.completed')
  return { items: events.filter((e) => e.data.type === 'response.output_item.done').map((e) => e.data.item), response: completed.response }
}

describe('previous_response_id rebuilds the whole conversation', () => {
  test('a chat target: three turns with a tool call and reasoning; earlier instructions are not carried over', async () => {
    const tools = [WEATHER]
    const first = await created(await post({ model: 'chat/gpt', instructions: 'Be brief.', input: 'weather in Boston?', tools, reasoning: { effort: 'low' } }))
    const call = first.output.find((item: Json) => item.type === 'function_call')
    expect(call).toMatchObject({ name: 'get_weather', arguments: '{"city":"Boston"}' })
    const reasoning = chat.completions.at(-1)!.choices[0].message.reasoning_content as string

    // The fake refuses a tool turn whose reasoning_content did not come back with its call.
    const second = await created(
      await post({ model: 'chat/gpt', previous_response_id: first.id, input: [{ type: 'function_call_output', call_id: call.call_id, output: '12C' }], tools }),
    )
    expect(second.previous_response_id).toBe(first.id)
    const answer = second.output.find((item: Json) => item.type === 'message').content[0].text as string
    expect(answer).toContain(`${OPENAI_MARKER} (the tool said: 12C)`)

    // Streamed this time: kept all the same.
    const third = await streamedTurn({ model: 'chat/gpt', previous_response_id: second.id, input: 'and tomorrow?', tools })
    expect(third.response.previous_response_id).toBe(second.id)
    expect(chat.chatCalls().at(-1)!.body.messages).toEqual([
      { role: 'user', content: 'weather in Boston?' },
      {
        role: 'assistant',
        content: null,
        reasoning_content: reasoning,
        tool_calls: [{ id: call.call_id, type: 'function', function: { name: 'get_weather', arguments: '{"city":"Boston"}' } }],
      },
      { role: 'tool', tool_call_id: call.call_id, content: '12C' },
      { role: 'assistant', content: answer },
      { role: 'user', content: 'and tomorrow?' },
    ])

    // Its input items are the whole conversation it was made from, valid as OpenAI's list.
    const listed = await get(gateway.url, key, `/v1/responses/${third.response.id}/input_items?order=asc`)
    const page = (await listed.json()) as { data: Json[] }
    expect(openapiErrors('ResponseItemList', page)).toBeNull()
    expect(page.data.map((item) => [item.type, item.role ?? null])).toEqual([
      ['message', 'user'],
      ['reasoning', null],
      ['function_call', null],
      ['function_call_output', null],
      ['message', 'assistant'],
      ['message', 'user'],
    ])
    expect(page.data.map((item) => item.id)).toEqual([
      expect.any(String),
      ...first.output.map((item: Json) => item.id),
      expect.any(String),
      ...second.output.map((item: Json) => item.id),
      expect.any(String),
    ])

    // A fourth turn continues from the second, not the third: a branch.
    await created(await post({ model: 'chat/gpt', previous_response_id: second.id, input: 'and in Paris?' }))
    expect(
      chat
        .chatCalls()
        .at(-1)!
        .body.messages.map((m: Json) => m.role),
    ).toEqual(['user', 'assistant', 'tool', 'assistant', 'user'])
    expect(chat.chatCalls().at(-1)!.body.messages.at(-1)).toEqual({ role: 'user', content: 'and in Paris?' })
  })

  test('an Anthropic target: the signed thinking of the tool turn goes back with its call; the rebuilt history on a chat target keeps only its text', async () => {
    const tools = [WEATHER]
    const first = await created(await post({ model: 'claude/sonnet', input: 'weather in Paris?', tools, reasoning: { effort: 'low' } }))
    expect(first.output.map((item: Json) => item.type)).toEqual(['reasoning', 'function_call'])
    // Not asked for: the signed thinking stays with the gateway.
    expect(first.output[0].encrypted_content).toBeUndefined()
    const call = first.output[1]
    const issued = claude.messageCalls().length

    const second = await created(
      await post({
        model: 'claude/sonnet',
        previous_response_id: first.id,
        input: [{ type: 'function_call_output', call_id: call.call_id, output: '18C' }],
        reasoning: { effort: 'low' },
      }),
    )
    expect(claude.messageCalls().length).toBe(issued + 1)
    const sent = claude.messageCalls().at(-1)!.body.messages as Json[]
    expect(sent[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: expect.stringContaining('fake-anthropic-a thought'), signature: expect.stringMatching(/^fakesig_a_/) },
        { type: 'tool_use', id: call.call_id, name: 'get_weather', input: { city: 'Paris' } },
      ],
    })
    expect(sent[2]).toEqual({ role: 'user', content: [{ type: 'tool_result', tool_use_id: call.call_id, content: '18C' }] })
    const text = second.output.find((item: Json) => item.type === 'message').content[0].text as string
    expect(text).toContain(`${ANTHROPIC_MARKER} (the tool said: 18C)`)

    // Sealed reasoning is shown only when asked for: on GET and in the input items alike.
    const plain = (await (await get(gateway.url, key, `/v1/responses/${first.id}`)).json()) as Json
    expect(plain.output[0].encrypted_content).toBeUndefined()
    const sealed = (await (await get(gateway.url, key, `/v1/responses/${first.id}?include[]=reasoning.encrypted_content`)).json()) as Json
    expect(sealed.output[0].encrypted_content).toEqual(expect.any(String))
    const items = async (query: string) =>
      ((await (await get(gateway.url, key, `/v1/responses/${second.id}/input_items${query}`)).json()) as { data: Json[] }).data
    expect((await items('?order=asc'))[1]).toEqual({ type: 'reasoning', id: first.output[0].id, summary: [] })
    expect((await items('?order=asc&include[]=reasoning.encrypted_content'))[1]!.encrypted_content).toBe(sealed.output[0].encrypted_content)

    // The same conversation continued on a chat target: the thinking's text as reasoning_content, no signature.
    await created(await post({ model: 'chat/gpt', previous_response_id: second.id, input: 'thanks' }))
    const onChat = chat.chatCalls().at(-1)!.body.messages as Json[]
    expect(onChat[1]).toMatchObject({
      role: 'assistant',
      reasoning_content: expect.stringContaining('fake-anthropic-a thought'),
      tool_calls: [{ id: call.call_id }],
    })
    expect(onChat.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'user'])
  })
  test('input_tokens with previous_response_id counts the whole conversation (the mock counts words); another key’s id is 404', async () => {
    const first = await created(await post({ model: 'local/echo', input: 'one two three four five' }))
    const count = async (body: Json, as = key) => {
      const response = await postJson(gateway.url, as, body, '/v1/responses/input_tokens')
      return { status: response.status, body: (await response.json()) as Json }
    }
    expect(await count({ model: 'local/echo', input: 'six' })).toEqual({ status: 200, body: { object: 'response.input_tokens', input_tokens: 1 } })
    // The five words asked, the five echoed, and the new one.
    expect(await count({ model: 'local/echo', previous_response_id: first.id, input: 'six' })).toEqual({
      status: 200,
      body: { object: 'response.input_tokens', input_tokens: 11 },
    })
    const { key: other } = await createKey(gateway.url, { name: 'counter', tier: 'open' })
    const foreign = await count({ model: 'local/echo', previous_response_id: first.id, input: 'six' }, other)
    expect(foreign.status).toBe(404)
    expect(foreign.body).toMatchObject({ error: { type: 'not_found_error', param: 'previous_response_id' } })
  })
})

describe('stateless', () => {
  test('Codex’s loop through an Anthropic alias (streamed, store:false, include encrypted reasoning): signatures restored each turn, nothing kept', async () => {
    const tools = [WEATHER]
    // What Codex sends each turn besides its input.
    const base = {
      model: 'claude/sonnet',
      instructions: 'You are a coding agent.',
      tools,
      tool_choice: 'auto',
      parallel_tool_calls: false,
      store: false,
      include: ['reasoning.encrypted_content'],
      reasoning: { effort: 'low', summary: 'auto' },
      prompt_cache_key: 'session-1',
    }
    const input: Json[] = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'weather in Paris?' }] }]
    const first = await streamedTurn({ ...base, input })
    expect(first.items.map((item) => item.type)).toEqual(['reasoning', 'function_call'])
    expect(first.items[0]!.encrypted_content).toEqual(expect.any(String))
    expect(first.items[0]!.encrypted_content).not.toContain('fakesig')
    const call = first.items[1]!
    input.push(...first.items, { type: 'function_call_output', call_id: call.call_id, output: '18C' })

    const issued = claude.messageCalls().length
    const second = await streamedTurn({ ...base, input })
    expect(claude.messageCalls().length).toBe(issued + 1)
    const thinking = claude.messageCalls().at(-1)!.body.messages[1].content[0]
    expect(thinking).toEqual({ type: 'thinking', thinking: first.items[0]!.summary[0].text, signature: expect.stringMatching(/^fakesig_a_/) })
    const message = second.items.find((item) => item.type === 'message')!
    expect(message.content[0].text).toContain('(the tool said: 18C)')

    // A third turn after the answer: both earlier turns' reasoning still opens.
    input.push(...second.items, { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'thanks' }] })
    const third = await streamedTurn({ ...base, input })
    expect(third.response.status).toBe('completed')
    const last = claude.messageCalls().at(-1)!.body
    expect(last).toMatchObject({ system: [{ type: 'text', text: 'You are a coding agent.' }], tool_choice: { type: 'auto', disable_parallel_tool_use: true } })
    expect((last.messages as Json[]).map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user'])

    // store:false: none of them is kept.
    for (const turn of [first, second, third]) {
      expect((await get(gateway.url, key, `/v1/responses/${turn.response.id}`)).status).toBe(404)
      const refused = await post({ model: 'claude/sonnet', previous_response_id: turn.response.id, input: 'more' })
      expect(refused.status).toBe(404)
      expect(await refused.json()).toMatchObject({ error: { type: 'not_found_error', param: 'previous_response_id', code: 'previous_response_not_found' } })
    }
  })

  test('sealed reasoning cannot be forged: a tampered token never reaches the upstream as thinking, and is named in x-svc-dropped', async () => {
    const first = await created(
      await post({
        model: 'claude/sonnet',
        input: 'weather?',
        tools: [WEATHER],
        store: false,
        include: ['reasoning.encrypted_content'],
        reasoning: { effort: 'low' },
      }),
    )
    const [reasoning, call] = first.output as Json[]
    const token = reasoning!.encrypted_content as string
    const forged = { ...reasoning, encrypted_content: token.slice(0, -4) + (token.endsWith('AAAA') ? 'BBBB' : 'AAAA') }
    // A tool turn without its thinking: Anthropic refuses it (its 400 passed on), and no forged block was sent.
    const refused = await post({
      model: 'claude/sonnet',
      store: false,
      tools: [WEATHER],
      input: [{ role: 'user', content: 'weather?' }, forged, call, { type: 'function_call_output', call_id: call!.call_id, output: '1C' }],
    })
    expect(refused.status).toBe(400)
    expect(await refused.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 'upstream_rejected' } })
    expect((claude.messageCalls().at(-1)!.body.messages[1].content as Json[]).some((block) => block.type === 'thinking')).toBe(false)
    // A text turn after it: served, the token named as left out.
    const served = await post({
      model: 'claude/sonnet',
      store: false,
      input: [{ role: 'user', content: 'hi' }, forged, { role: 'assistant', content: 'hello' }, { role: 'user', content: 'again' }],
    })
    expect(served.status).toBe(200)
    expect(served.headers.get('x-svc-dropped')).toContain('reasoning.encrypted_content')
    expect(claude.messageCalls().at(-1)!.body.messages[1]).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'hello' }] })
  })
})

describe('ownership', () => {
  test('another key cannot read, list, continue or delete a response (404, as if it did not exist)', async () => {
    const mine = await created(await post({ model: 'local/echo', input: 'mine only' }))
    const { key: other } = await createKey(gateway.url, { name: 'other', tier: 'open' })
    for (const [method, path] of [
      ['GET', `/v1/responses/${mine.id}`],
      ['GET', `/v1/responses/${mine.id}/input_items`],
      ['DELETE', `/v1/responses/${mine.id}`],
    ] as const) {
      const response = await get(gateway.url, other, path, method)
      expect({ method, path, status: response.status }).toEqual({ method, path, status: 404 })
      expect(await response.json()).toMatchObject({ error: { type: 'not_found_error', message: `No response found with id "${mine.id}"` } })
    }
    const continued = await post({ model: 'local/echo', previous_response_id: mine.id, input: 'x' }, other)
    expect(continued.status).toBe(404)
    // Still there for its owner.
    expect(await (await get(gateway.url, key, `/v1/responses/${mine.id}`)).json()).toEqual(mine)
    expect((await post({ model: 'local/echo', previous_response_id: mine.id, input: 'x' })).status).toBe(200)
  })
})

describe('SQLite: the store outlives the process', () => {
  test('a response kept before a restart is continued after it, its sealed thinking opening with the secret kept beside the database', async () => {
    using sqliteDir = tempDir()
    const env = {
      GATEWAY_DB: `${sqliteDir.path}/gateway.sqlite`,
      GATEWAY_CONFIG: writeConfig(sqliteDir.path, config(chat.url, claude.url)),
      FAKE_ANTHROPIC_KEY: 'sk-ant-fake',
      FAKE_OPENAI_KEY: 'sk-openai-fake',
    }
    const before = await inProcessGateway({ env })
    const auth = { authorization: `Bearer ${before.key}` }
    let first: Json
    try {
      first = (await (
        await before.request('/v1/responses', json({ model: 'claude/sonnet', input: 'weather?', tools: [WEATHER], reasoning: { effort: 'low' } }, auth))
      ).json()) as Json
      expect(first.output.map((item: Json) => item.type)).toEqual(['reasoning', 'function_call'])
    } finally {
      await closeGateway(before.gateway)
    }
    const after = await createGateway({ env: readEnv({ LOG_LEVEL: 'error', ...env }), log: createLogger('error') })
    try {
      const app = await createApp(after)
      const call = first.output[1]
      const body = { model: 'claude/sonnet', previous_response_id: first.id, input: [{ type: 'function_call_output', call_id: call.call_id, output: '18C' }] }
      const response = await app.handle(new Request('http://localhost/v1/responses', json(body, auth)))
      expect(response.status).toBe(200)
      expect(claude.messageCalls().at(-1)!.body.messages[1].content[0]).toMatchObject({ type: 'thinking', signature: expect.stringMatching(/^fakesig_a_/) })
    } finally {
      await closeGateway(after)
    }
  })
})

describe('expiry', () => {
  test('a stored response is gone after responses_ttl_days (injected clock): GET, input_items and previous_response_id are 404', async () => {
    using ttlDir = tempDir()
    const clock = { now: Date.UTC(2026, 10, 26, 10, 15) }
    const configPath = writeConfig(
      ttlDir.path,
      `${OPEN_TIER}\n[upstreams.local]\nkind = "mock"\n[aliases."local/echo"]\ntargets = [{ upstream = "local", model = "echo" }]\n[conversations]\nresponses_ttl_days = 2\n`,
    )
    const gw = await inProcessGateway({ env: { GATEWAY_CONFIG: configPath }, now: () => clock.now })
    try {
      const auth = { authorization: `Bearer ${gw.key}` }
      const first = (await (await gw.request('/v1/responses', json({ model: 'local/echo', input: 'remember me' }, auth))).json()) as Json
      const second = (await (
        await gw.request('/v1/responses', json({ model: 'local/echo', previous_response_id: first.id, input: 'and me' }, auth))
      ).json()) as Json
      expect(second.id).toMatch(/^resp_/)
      const reads = async () => [
        (await gw.request(`/v1/responses/${first.id}`, { headers: auth })).status,
        (await gw.request(`/v1/responses/${second.id}/input_items`, { headers: auth })).status,
        // store:false: a continuation that is not kept, so it extends no one's life.
        (await gw.request('/v1/responses', json({ model: 'local/echo', previous_response_id: second.id, input: 'x', store: false }, auth))).status,
      ]
      clock.now += 2 * DAY_MS - 60_000
      expect(await reads()).toEqual([200, 200, 200])
      // Expiry is rounded up to the hour: an hour past two days, it is gone.
      clock.now += 3_600_000 + 60_000
      expect(await reads()).toEqual([404, 404, 404])
    } finally {
      await gw.close()
    }
  })
})
