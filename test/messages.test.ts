import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import Anthropic from '@anthropic-ai/sdk'
import { fixture, fixtureText, sseBody, sseFixture } from './support/fixtures'
import { tempDir, writeConfig } from './support/gateway'
import { type GatewayProcess, runCli, spawnGateway } from './support/process'
import { fakeUpstream, type FakeUpstream, openaiCompletion, openaiStream, type RecordedRequest } from './support/upstream'
import { setup, teardown, TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

/** Event types of an Anthropic stream, pings dropped and runs of the same delta kept once: its shape. */
function shape(events: { type: string; delta?: { type?: string }; content_block?: { type: string } }[]): string[] {
  const out: string[] = []
  for (const event of events) {
    if (event.type === 'ping') continue
    const name =
      event.type === 'content_block_start'
        ? `start:${event.content_block!.type}`
        : event.type === 'content_block_delta'
          ? `delta:${event.delta!.type}`
          : event.type
    if (out.at(-1) !== name) out.push(name)
  }
  return out
}

const parseSse = (text: string) =>
  text
    .split('\n\n')
    .filter(Boolean)
    .map((block) => {
      const lines = block.split('\n')
      return { event: lines.find((l) => l.startsWith('event: '))?.slice(7) ?? null, data: lines.find((l) => l.startsWith('data: '))?.slice(6) ?? '' }
    })

const WEATHER_TOOL: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Weather for a place',
  input_schema: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
}

describe('the Anthropic SDK against the mock', () => {
  const dir = tempDir()
  let gateway: GatewayProcess
  let client: Anthropic
  setup(async () => {
    gateway = await spawnGateway({ GATEWAY_DB: `${dir.path}/gateway.sqlite` }, { expectFirstKey: true })
    client = new Anthropic({ apiKey: gateway.firstKey!, baseURL: gateway.url, maxRetries: 0 })
  })
  teardown(async () => {
    await gateway.stop()
    dir[Symbol.dispose]()
  })

  test('messages.create: an Anthropic message, the alias as model, usage', async () => {
    const message = await client.messages.create({ model: 'local/echo', max_tokens: 100, messages: [{ role: 'user', content: 'hello there friend' }] })
    expect(message).toMatchObject({ type: 'message', role: 'assistant', model: 'local/echo', stop_reason: 'end_turn', stop_sequence: null })
    expect(message.content as unknown[]).toEqual([{ type: 'text', text: 'hello there friend' }])
    expect(message.usage).toMatchObject({ input_tokens: 3, output_tokens: 3 })
  })

  test('messages.stream: text events, and finalMessage() assembled from the documented event sequence', async () => {
    const stream = client.messages.stream({ model: 'local/echo', max_tokens: 100, messages: [{ role: 'user', content: 'one two three' }] })
    const texts: string[] = []
    stream.on('text', (text) => texts.push(text))
    const final = await stream.finalMessage()
    expect(texts.join('')).toBe('one two three')
    expect(final.content.map((b) => (b.type === 'text' ? { type: b.type, text: b.text } : b))).toEqual([{ type: 'text', text: 'one two three' }])
    expect(final.stop_reason).toBe('end_turn')
    expect(final.usage).toMatchObject({ input_tokens: 3, output_tokens: 3 })
  })

  test('a tool loop: tool_choice any gives a tool_use; its tool_result gets the answer', async () => {
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'weather in Paris' }]
    const first = await client.messages.create({ model: 'local/echo', max_tokens: 100, tools: [WEATHER_TOOL], tool_choice: { type: 'any' }, messages })
    expect(first.stop_reason).toBe('tool_use')
    expect(first.content as unknown[]).toEqual([{ type: 'tool_use', id: 'call_mock_1', name: 'get_weather', input: {} }])

    messages.push(
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_mock_1', content: '18 degrees' }] },
    )
    const streamed = await client.messages.stream({ model: 'local/echo', max_tokens: 100, tools: [WEATHER_TOOL], messages }).finalMessage()
    expect(streamed.stop_reason).toBe('end_turn')
    expect(streamed.content.map((b) => (b.type === 'text' ? { type: b.type, text: b.text } : b))).toEqual([{ type: 'text', text: 'weather in Paris' }])
  })

  test('count_tokens: the mock counts words', async () => {
    const count = await client.messages.countTokens({
      model: 'local/echo',
      system: 'be brief',
      messages: [{ role: 'user', content: 'count these four words' }],
    })
    expect(count.input_tokens).toBe(6)
  })

  test('errors in Anthropic shape: a bad key is an AuthenticationError, an unknown alias a NotFoundError', async () => {
    const bad = new Anthropic({ apiKey: 'sk-cg-not-a-key', baseURL: gateway.url, maxRetries: 0 })
    const unauthorized = await bad.messages.create({ model: 'local/echo', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)
    expect(unauthorized).toBeInstanceOf(Anthropic.AuthenticationError)
    expect((unauthorized as InstanceType<typeof Anthropic.AuthenticationError>).error).toEqual({
      type: 'error',
      error: { type: 'authentication_error', message: 'Unauthorized' },
    })
    const missing = await client.messages.create({ model: 'nope/x', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e)
    expect(missing).toBeInstanceOf(Anthropic.NotFoundError)
    expect((missing as InstanceType<typeof Anthropic.NotFoundError>).error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } })
    const invalid = await client.messages
      .create({ model: 'local/echo', max_tokens: 10, messages: [{ role: 'robot' as 'user', content: 'x' }] })
      .catch((e: unknown) => e)
    expect(invalid).toBeInstanceOf(Anthropic.BadRequestError)
    expect((invalid as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } })
  })
})

describe('the Anthropic SDK against an OpenAI-compatible upstream: translated both ways', () => {
  const dir = tempDir()
  let upstream: FakeUpstream
  let gateway: GatewayProcess
  let client: Anthropic
  const toolCalls = fixture('openai/response-tool-calls.json').response
  const toolStream = fixtureText('openai/stream-tool-calls.sse')
    .split('\n')
    .filter((line) => !line.startsWith(':'))
    .join('\n')
    .trim()
  setup(async () => {
    upstream = fakeUpstream((request: RecordedRequest) => {
      const answeringTools = (request.body.messages as { role: string }[]).some((m) => m.role === 'tool')
      if (request.body.stream) {
        return answeringTools
          ? openaiStream(String(request.body.model), ['Sunny', ' in both.'])
          : new Response(`${toolStream}\n\n`, { headers: { 'content-type': 'text/event-stream' } })
      }
      return answeringTools ? openaiCompletion(String(request.body.model), 'Sunny in both.') : Response.json({ ...toolCalls, model: request.body.model })
    })
    const config = writeConfig(
      dir.path,
      `
[tiers.t]
requests_per_minute = 1000
tokens_per_minute = 10000000
max_concurrent = 8
[upstreams.gpt]
kind = "openai"
base_url = "${upstream.url}"
[aliases."gpt/tools"]
targets = [{ upstream = "gpt", model = "gpt-4o" }]
`,
    )
    gateway = await spawnGateway({ GATEWAY_DB: `${dir.path}/gateway.sqlite`, GATEWAY_CONFIG: config }, { expectFirstKey: true })
    client = new Anthropic({ apiKey: gateway.firstKey!, baseURL: gateway.url, maxRetries: 0 })
  })
  teardown(async () => {
    await gateway.stop()
    upstream.stop()
    dir[Symbol.dispose]()
  })

  const calls = () => toolCalls.choices[0].message.tool_calls as { id: string; function: { name: string; arguments: string } }[]

  test('a tool loop, not streamed: tool_calls become tool_use blocks; tool_result goes back as a tool message', async () => {
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Weather in two cities?' }]
    const first = await client.messages.create({
      model: 'gpt/tools',
      max_tokens: 500,
      system: [{ type: 'text', text: 'Be brief.' }],
      tools: [WEATHER_TOOL],
      messages,
    })
    const sent = upstream.requests.at(-1)!.body
    expect(sent).toMatchObject({
      model: 'gpt-4o',
      max_completion_tokens: 500,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Weather in two cities?' },
      ],
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather for a place', parameters: WEATHER_TOOL.input_schema } }],
    })
    expect(first.stop_reason).toBe('tool_use')
    expect(first.model).toBe('gpt/tools')
    const uses = first.content.filter((b) => b.type === 'tool_use')
    expect(uses.map((b) => [b.id, b.name, b.input])).toEqual(calls().map((c) => [c.id, c.function.name, JSON.parse(c.function.arguments)]))

    messages.push(
      { role: 'assistant', content: first.content },
      { role: 'user', content: uses.map((b) => ({ type: 'tool_result' as const, tool_use_id: b.id, content: 'sunny' })) },
    )
    const second = await client.messages.create({ model: 'gpt/tools', max_tokens: 500, tools: [WEATHER_TOOL], messages })
    expect(second.content as unknown[]).toEqual([{ type: 'text', text: 'Sunny in both.' }])
    const followUp = upstream.requests.at(-1)!.body.messages as Record<string, unknown>[]
    expect(followUp.at(-3)).toMatchObject({
      role: 'assistant',
      tool_calls: calls().map((c) => ({ id: c.id, type: 'function', function: { name: c.function.name } })),
    })
    expect(followUp.slice(-2)).toEqual(uses.map((b) => ({ role: 'tool', tool_call_id: b.id, content: 'sunny' })))
  })

  test("streamed: Anthropic's event sequence (compared with a recorded transcript), input_json_delta per tool, correct block indices", async () => {
    const raw = await fetch(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': gateway.firstKey!, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: 'gpt/tools',
        max_tokens: 500,
        stream: true,
        tools: [WEATHER_TOOL],
        messages: [{ role: 'user', content: 'Weather in two cities?' }],
      }),
    })
    expect(raw.headers.get('content-type')).toContain('text/event-stream')
    const events = parseSse(await raw.text())
    for (const { event, data } of events) expect(JSON.parse(data).type).toBe(event)
    const parsed = events.map((e) => JSON.parse(e.data))
    // The same shape as a real Anthropic tool-use stream, one tool_use block per parallel call.
    const recorded = shape(sseFixture('anthropic/stream-tool-use.sse').map((e) => JSON.parse(e.data)))
    const toolBlocks = recorded.slice(recorded.indexOf('start:tool_use'), recorded.indexOf('message_delta'))
    expect(shape(parsed)).toEqual(['message_start', ...toolBlocks, ...toolBlocks, 'message_delta', 'message_stop'])
    // Block indices count up from 0; each block's deltas carry its own index.
    const starts = parsed.filter((e) => e.type === 'content_block_start')
    expect(starts.map((e) => e.index)).toEqual([0, 1])
    for (const start of starts) {
      const input = parsed
        .filter((e) => e.type === 'content_block_delta' && e.index === start.index)
        .map((e) => e.delta.partial_json)
        .join('')
      const call = calls().find((c) => c.id === start.content_block.id)!
      expect(JSON.parse(input)).toEqual(JSON.parse(call.function.arguments))
    }
    expect(parsed.find((e) => e.type === 'message_delta').delta.stop_reason).toBe('tool_use')

    const final = await client.messages
      .stream({ model: 'gpt/tools', max_tokens: 500, tools: [WEATHER_TOOL], messages: [{ role: 'user', content: 'Weather in two cities?' }] })
      .finalMessage()
    expect(final.content.map((b) => (b.type === 'tool_use' ? [b.id, b.input] : null))).toEqual(calls().map((c) => [c.id, JSON.parse(c.function.arguments)]))
    expect(final.usage.output_tokens).toBeGreaterThan(0)
  })
})

describe('Anthropic upstreams: the body as sent, the answer as sent', () => {
  const dir = tempDir()
  const seen: { text: string; headers: Headers }[] = []
  let anthropic: ReturnType<typeof Bun.serve>
  let gateway: GatewayProcess
  const message = {
    ...fixture('anthropic/message-tool-use.json').response,
    type: 'message',
    stop_sequence: null,
    usage: { input_tokens: 20, output_tokens: 9 },
  }
  setup(async () => {
    anthropic = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(req) {
        const text = await req.text()
        seen.push({ text, headers: req.headers })
        const body = JSON.parse(text) as { stream?: boolean; model: string }
        if (new URL(req.url).pathname.endsWith('/count_tokens')) return Response.json({ input_tokens: 1234 })
        if (body.stream) return new Response(sseBody(sseFixture('anthropic/stream-tool-use.sse')), { headers: { 'content-type': 'text/event-stream' } })
        return new Response(JSON.stringify(message), { headers: { 'content-type': 'application/json' } })
      },
    })
    const config = writeConfig(
      dir.path,
      `
[tiers.t]
requests_per_minute = 1000
tokens_per_minute = 10000000
max_concurrent = 8
[upstreams.claude]
kind = "anthropic"
base_url = "http://127.0.0.1:${anthropic.port}/v1"
api_key_env = "TEST_ANTHROPIC_KEY"
[aliases."claude/code"]
targets = [{ upstream = "claude", model = "claude-opus-4-6" }]
`,
    )
    gateway = await spawnGateway(
      { GATEWAY_DB: `${dir.path}/gateway.sqlite`, GATEWAY_CONFIG: config, TEST_ANTHROPIC_KEY: 'sk-ant-secret' },
      { expectFirstKey: true },
    )
  })
  teardown(async () => {
    await gateway.stop()
    anthropic.stop(true)
    dir[Symbol.dispose]()
  })

  const post = (path: string, body: string, extra: Record<string, string> = {}) =>
    fetch(`${gateway.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': gateway.firstKey!, ...extra }, body })

  test("Claude Code's request (system blocks, cache_control, tools, stream): forwarded byte for byte but the model, anthropic-beta passed on, events relayed", async () => {
    const { request } = fixture('anthropic/messages-request-claude-code.json')
    const text = JSON.stringify({ ...request, model: 'claude/code' }, null, 1)
    const response = await post('/v1/messages', text, {
      'anthropic-version': '2023-06-01',
      'anthropic-beta': 'prompt-caching-2024-07-31,context-management-2025-06-27',
    })
    expect(response.status).toBe(200)
    const forwarded = seen.at(-1)!
    expect(forwarded.text).toBe(text.replace('"model": "claude/code"', '"model": "claude-opus-4-6"'))
    expect(forwarded.text).toContain('"cache_control"')
    expect(forwarded.headers.get('anthropic-beta')).toBe('prompt-caching-2024-07-31,context-management-2025-06-27')
    expect(forwarded.headers.get('anthropic-version')).toBe('2023-06-01')
    expect(forwarded.headers.get('x-api-key')).toBe('sk-ant-secret')
    // Every event as the upstream sent it, but message_start's model.
    const expected = sseFixture('anthropic/stream-tool-use.sse').map((e) =>
      e.event === 'message_start' ? { ...e, data: e.data.replace('"model":"claude-opus-5"', '"model":"claude/code"') } : e,
    )
    const got = parseSse(await response.text())
    expect(got).toEqual(expected.map(({ event, data }) => ({ event, data })))
  })

  test('JSON: the answer as sent but its model; count_tokens answered upstream', async () => {
    const body =
      '{"model":"claude/code","max_tokens":64,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}'
    const response = await post('/v1/messages', body)
    expect(seen.at(-1)!.text).toBe(body.replace('"claude/code"', '"claude-opus-4-6"'))
    expect(await response.text()).toBe(JSON.stringify(message).replace(`"model":"${message.model}"`, '"model":"claude/code"'))
    expect(response.headers.get('x-svc-upstream')).toBe('claude')

    const count = await post('/v1/messages/count_tokens', '{"model":"claude/code","messages":[{"role":"user","content":"hi"}]}')
    expect(await count.json()).toEqual({ input_tokens: 1234 })
    expect(seen.at(-1)!.text).toBe('{"model":"claude-opus-4-6","messages":[{"role":"user","content":"hi"}]}')
  })
})

// From here on, each test starts a gateway of its own, on a database of its own: they run side by side.

describe("Claude Code's request against an OpenAI-compatible upstream", () => {
  test.concurrent(
    'translated: system blocks, tools, cache_control dropped as a hint, effort as reasoning_effort, streamed back as Anthropic events',
    async () => {
      using dir = tempDir()
      const upstream = fakeUpstream((request) => openaiStream(String(request.body.model), ['Hello', ' from GPT.']))
      const config = writeConfig(
        dir.path,
        `
[tiers.t]
requests_per_minute = 100
tokens_per_minute = 1000000
max_concurrent = 4
[upstreams.gpt]
kind = "openai"
base_url = "${upstream.url}"
[aliases."gpt/code"]
targets = [{ upstream = "gpt", model = "gpt-5" }]
`,
      )
      const gateway = await spawnGateway({ GATEWAY_DB: `${dir.path}/gateway.sqlite`, GATEWAY_CONFIG: config }, { expectFirstKey: true })
      try {
        const { request } = fixture('anthropic/messages-request-claude-code.json')
        const response = await fetch(`${gateway.url}/v1/messages`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${gateway.firstKey}`, 'anthropic-version': '2023-06-01' },
          body: JSON.stringify({ ...request, model: 'gpt/code' }),
        })
        expect(response.status).toBe(200)
        const sent = upstream.requests.at(-1)!.body as Record<string, any>
        expect(sent).toMatchObject({
          model: 'gpt-5',
          stream: true,
          max_completion_tokens: request.max_tokens,
          reasoning_effort: 'medium',
          user: request.metadata.user_id,
        })
        expect(sent.messages[0]).toEqual({ role: 'system', content: request.system.map((b: { text: string }) => ({ type: 'text', text: b.text })) })
        expect(sent.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(request.tools.map((t: { name: string }) => t.name))
        expect(JSON.stringify(sent)).not.toContain('cache_control')
        const events = parseSse(await response.text()).map((e) => JSON.parse(e.data))
        expect(shape(events)).toEqual(['message_start', 'start:text', 'delta:text_delta', 'content_block_stop', 'message_delta', 'message_stop'])
        expect(
          events
            .filter((e) => e.type === 'content_block_delta')
            .map((e) => e.delta.text)
            .join(''),
        ).toBe('Hello from GPT.')
      } finally {
        await gateway.stop()
        upstream.stop()
      }
    },
  )
})

describe('limits and usage across the three APIs', () => {
  test.concurrent('rpm counts chat, messages and embeddings in one window; usage counts each', async () => {
    using dir = tempDir()
    const env = { GATEWAY_DB: `${dir.path}/gateway.sqlite` }
    const created = await runCli(['keys', 'create', '--name', 'mixed', '--tier', 'pro', '--rpm', '5', '--json'], env)
    const { key } = JSON.parse(created.stdout) as { key: string }
    const gateway = await spawnGateway(env)
    try {
      const send = (path: string, body: unknown) =>
        fetch(`${gateway.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify(body) })
      const chat = () => send('/v1/chat/completions', { model: 'local/echo', messages: [{ role: 'user', content: 'a b' }] })
      const messages = () => send('/v1/messages', { model: 'local/echo', max_tokens: 10, messages: [{ role: 'user', content: 'c d e' }] })
      const embed = () => send('/v1/embeddings', { model: 'local/embed', input: 'f g h i' })
      const statuses = []
      for (const call of [chat, messages, embed, chat, messages, embed, messages]) statuses.push((await call()).status)
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429])
      const refused = await messages()
      expect(await refused.json()).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } })
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/)
      const usage = JSON.parse((await runCli(['usage', '--json'], env)).stdout) as {
        totals: Record<string, number>
        data: { alias: string; requests: number }[]
      }
      // chat: 2 words in, 2 out; messages: 3 in, 3 out; embeddings: 4 in, none out.
      expect(usage.totals).toMatchObject({ requests: 5, errors: 0, prompt_tokens: 2 + 3 + 4 + 2 + 3, completion_tokens: 2 + 3 + 2 + 3 })
      expect(Object.fromEntries(usage.data.map((row) => [row.alias, row.requests]))).toEqual({ 'local/echo': 4, 'local/embed': 1 })
    } finally {
      await gateway.stop()
    }
  })

  test.concurrent('tpm counts the tokens of all three', async () => {
    using dir = tempDir()
    const env = { GATEWAY_DB: `${dir.path}/gateway.sqlite` }
    const created = await runCli(['keys', 'create', '--name', 'tokens', '--tier', 'pro', '--tpm', '10', '--json'], env)
    const { key } = JSON.parse(created.stdout) as { key: string }
    const gateway = await spawnGateway(env)
    try {
      const send = (path: string, body: unknown) =>
        fetch(`${gateway.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify(body) })
      expect((await send('/v1/embeddings', { model: 'local/embed', input: 'one two three four five six' })).status).toBe(200)
      expect((await send('/v1/messages', { model: 'local/echo', max_tokens: 10, messages: [{ role: 'user', content: 'one two' }] })).status).toBe(200)
      // 6 + 4 tokens: the window is full for every API.
      const refused = await send('/v1/chat/completions', { model: 'local/echo', messages: [{ role: 'user', content: 'x' }] })
      expect(refused.status).toBe(429)
      expect(await refused.json()).toMatchObject({ error: { type: 'rate_limit_error', code: 'rate_limit_exceeded' } })
    } finally {
      await gateway.stop()
    }
  })
})
