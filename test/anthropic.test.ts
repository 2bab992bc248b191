import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import OpenAI from 'openai'
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions'
import { fixture, schemaErrors, sseBody, sseFixture } from './support/fixtures'
import { tempDir, writeConfig } from './support/gateway'
import { type GatewayProcess, spawnGateway } from './support/process'
import { fakeUpstream, type FakeUpstream, openaiCompletion } from './support/upstream'
import { setup, teardown, TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

/**
 * A fake Anthropic Messages API on a real socket. It checks each translated request the way
 * Anthropic would (alternating turns, tool results answering the last tool_use, signed thinking
 * kept) and answers from the docs' own examples (test/fixtures/anthropic). A request it would
 * reject gets Anthropic's 400 with the reason, so a mistranslation fails the test loudly.
 */
interface Seen {
  headers: Headers
  body: Record<string, any>
}

const TOOL_STREAM = sseFixture('anthropic/stream-tool-use.sse')
const TOOL_STREAM_START = TOOL_STREAM.map((e) => JSON.parse(e.data)).find(
  (e) => e.type === 'content_block_start' && e.content_block.type === 'tool_use',
).content_block
const TOOL_MESSAGE = fixture('anthropic/message-tool-use.json').response
const TOOL_USE = TOOL_MESSAGE.content.find((b: { type: string }) => b.type === 'tool_use')

const envelope = (content: unknown[], stopReason: string) => ({
  id: 'msg_fake_1',
  type: 'message',
  role: 'assistant',
  model: 'claude-haiku-4-5',
  content,
  stop_reason: stopReason,
  stop_sequence: null,
  usage: { input_tokens: 40, output_tokens: 12, cache_read_input_tokens: 8 },
})

const refuse = (message: string) => Response.json({ type: 'error', error: { type: 'invalid_request_error', message } }, { status: 400 })

/** What Anthropic itself checks: roles alternate, a user turn after tool_use blocks starts with their results. */
function anthropicProblem(body: Record<string, any>): string | null {
  const messages = body.messages as { role: string; content: { type: string; id?: string; tool_use_id?: string }[] }[]
  for (let i = 0; i < messages.length; i++) {
    if (i > 0 && messages[i]!.role === messages[i - 1]!.role) return `messages.${i}: roles must alternate`
    if (!Array.isArray(messages[i]!.content)) continue
    const uses = messages[i]!.content.filter((b) => b.type === 'tool_use').map((b) => b.id)
    if (uses.length === 0) continue
    const next = messages[i + 1]?.content ?? []
    if (next.length === 0) continue
    const leading = next.slice(0, uses.length)
    if (JSON.stringify(leading.map((b) => b.type === 'tool_result' && b.tool_use_id)) !== JSON.stringify(uses)) {
      return `messages.${i + 1}: the turn must start with tool_result blocks answering ${uses.join(', ')}`
    }
  }
  for (const tool of body.tools ?? []) if (tool.input_schema?.type !== 'object') return `tools: input_schema.type must be "object"`
  return null
}

function fakeAnthropic() {
  const seen: Seen[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const body = (await req.json()) as Record<string, any>
      seen.push({ headers: req.headers, body })
      const problem = anthropicProblem(body)
      if (problem) return refuse(problem)
      const lastTurn = body.messages.at(-1)
      const lastText = lastTurn.content.findLast?.((b: { type: string }) => b.type === 'text')?.text ?? ''
      if (lastText === 'bad') return refuse('messages: text content blocks must be non-empty')
      if (lastText === 'overloaded') return Response.json({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, { status: 529 })
      const stream = body.stream === true
      if (lastText === 'stream-error')
        return new Response(sseBody(sseFixture('anthropic/stream-error.sse')), { headers: { 'content-type': 'text/event-stream' } })
      const answeringTool = lastTurn.content.some((b: { type: string }) => b.type === 'tool_result')
      if (stream) {
        const transcript = answeringTool || !body.tools ? sseFixture('anthropic/stream-text.sse') : TOOL_STREAM
        return new Response(sseBody(transcript), { headers: { 'content-type': 'text/event-stream' } })
      }
      if (answeringTool || !body.tools) return Response.json(envelope([{ type: 'text', text: 'It is 18 degrees in San Francisco.' }], 'end_turn'))
      // A forced tool is called, with the docs example's input.
      if (body.tool_choice?.type === 'tool') return Response.json(envelope([{ ...TOOL_USE, name: body.tool_choice.name }], 'tool_use'))
      return Response.json(envelope(TOOL_MESSAGE.content, 'tool_use'))
    },
  })
  return { url: `http://127.0.0.1:${server.port}/v1`, seen, stop: () => void server.stop(true) }
}

const WEATHER_PARAMETERS = { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] }
const WEATHER: ChatCompletionTool[] = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather for a place', parameters: WEATHER_PARAMETERS } },
]

describe('Anthropic upstream, end to end with the official openai SDK', () => {
  const dir = tempDir()
  let anthropic: ReturnType<typeof fakeAnthropic>
  let openaiFallback: FakeUpstream
  let gateway: GatewayProcess
  let client: OpenAI

  setup(async () => {
    anthropic = fakeAnthropic()
    openaiFallback = fakeUpstream((request) => openaiCompletion(String(request.body.model), 'served by the OpenAI fallback'))
    const config = writeConfig(
      dir.path,
      `
[tiers.t]
requests_per_minute = 1000
tokens_per_minute = 10000000
max_concurrent = 10

[upstreams.claude]
kind = "anthropic"
base_url = "${anthropic.url}"
api_key_env = "TEST_ANTHROPIC_KEY"
max_retries = 1

[upstreams.gpt]
kind = "openai"
base_url = "${openaiFallback.url}"

[aliases."claude/fast"]
targets = [{ upstream = "claude", model = "claude-haiku-4-5" }]

[aliases."claude/with-fallback"]
targets = [{ upstream = "claude", model = "claude-haiku-4-5" }, { upstream = "gpt", model = "gpt-4o-audio" }]
`,
    )
    gateway = await spawnGateway(
      { GATEWAY_DB: `${dir.path}/gateway.sqlite`, GATEWAY_CONFIG: config, TEST_ANTHROPIC_KEY: 'sk-ant-test-secret' },
      { expectFirstKey: true },
    )
    client = new OpenAI({ apiKey: gateway.firstKey!, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
  })
  teardown(async () => {
    await gateway.stop()
    anthropic.stop()
    openaiFallback.stop()
    dir[Symbol.dispose]()
  })

  test('a full tool loop, not streamed: the call comes back as tool_calls, the result goes back as tool_result, the answer is text', async () => {
    const messages: ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: "What's the weather in San Francisco?" },
    ]
    const first = await client.chat.completions.create({ model: 'claude/fast', messages, tools: WEATHER })
    expect(schemaErrors('CreateChatCompletionResponse', first)).toBeNull()
    const sent = anthropic.seen.at(-1)!
    expect(sent.headers.get('x-api-key')).toBe('sk-ant-test-secret')
    expect(sent.headers.get('anthropic-version')).toBe('2023-06-01')
    expect(sent.body).toMatchObject({
      model: 'claude-haiku-4-5',
      system: [{ type: 'text', text: 'You are terse.' }],
      tools: [{ name: 'get_weather', description: 'Weather for a place', input_schema: WEATHER_PARAMETERS }],
      max_tokens: 4096,
    })
    const call = first.choices[0]!.message.tool_calls![0]!
    expect(first.choices[0]!.finish_reason).toBe('tool_calls')
    expect(call).toEqual({ id: TOOL_USE.id, type: 'function', function: { name: 'get_weather', arguments: JSON.stringify(TOOL_USE.input) } })
    expect(first.model).toBe('claude/fast')

    messages.push(first.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: '18 degrees' })
    const second = await client.chat.completions.create({ model: 'claude/fast', messages, tools: WEATHER })
    expect(second.choices[0]!.message.content).toBe('It is 18 degrees in San Francisco.')
    expect(second.choices[0]!.finish_reason).toBe('stop')
    expect(second.usage).toMatchObject({ prompt_tokens: 48, completion_tokens: 12, prompt_tokens_details: { cached_tokens: 8 } })
    const turns = anthropic.seen.at(-1)!.body.messages
    expect(turns.at(-2)).toEqual({ role: 'assistant', content: TOOL_MESSAGE.content })
    expect(turns.at(-1)).toEqual({ role: 'user', content: [{ type: 'tool_result', tool_use_id: TOOL_USE.id, content: '18 degrees' }] })
  })

  test('a full tool loop, streamed: the SDK assembles the call from translated chunks; every chunk is schema-valid', async () => {
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: "What's the weather in San Francisco?" }]
    const raw = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gateway.firstKey}` },
      body: JSON.stringify({ model: 'claude/fast', messages, tools: WEATHER, stream: true, stream_options: { include_usage: true } }),
    })
    const events = (await raw.text()).split('\n\n').filter(Boolean)
    expect(events.at(-1)).toBe('data: [DONE]')
    for (const event of events.slice(0, -1)) expect(schemaErrors('CreateChatCompletionStreamResponse', JSON.parse(event.slice(6)))).toBeNull()

    const stream = client.chat.completions.stream({ model: 'claude/fast', messages, tools: WEATHER, stream: true })
    const first = await stream.finalChatCompletion()
    const call = first.choices[0]!.message.tool_calls![0]!
    expect(first.choices[0]!.finish_reason).toBe('tool_calls')
    expect(call.id).toBe(TOOL_STREAM_START.id)
    expect(call.type === 'function' && JSON.parse(call.function.arguments)).toEqual({ location: 'San Francisco, CA' })
    expect(first.choices[0]!.message.content).toStartWith('Okay')

    messages.push(first.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: '18 degrees' })
    let text = ''
    for await (const chunk of await client.chat.completions.create({ model: 'claude/fast', messages, tools: WEATHER, stream: true })) {
      text += chunk.choices[0]?.delta?.content ?? ''
    }
    const expected = sseFixture('anthropic/stream-text.sse')
      .map((e) => JSON.parse(e.data))
      .filter((e) => e.type === 'content_block_delta')
      .map((e) => e.delta.text)
      .join('')
    expect(text).toBe(expected)
    const turns = anthropic.seen.at(-1)!.body.messages
    expect(turns.at(-1).content).toEqual([{ type: 'tool_result', tool_use_id: call.id, content: '18 degrees' }])
  })

  test('an input_audio part: 400 unsupported_content when only Anthropic could serve it; served by the OpenAI target when the alias has one', async () => {
    const audio: ChatCompletionMessageParam[] = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is said here?' },
          { type: 'input_audio', input_audio: { data: 'UklGRiQAAABXQVZF', format: 'wav' } },
        ],
      },
    ]
    const before = anthropic.seen.length
    const refused = await client.chat.completions.create({ model: 'claude/fast', messages: audio }).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError)
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({
      type: 'invalid_request_error',
      code: 'unsupported_content',
      param: 'messages.0.content.1',
    })
    // Not sent to Anthropic at all.
    expect(anthropic.seen.length).toBe(before)

    const { data, response } = await client.chat.completions.create({ model: 'claude/with-fallback', messages: audio }).withResponse()
    expect(data.choices[0]!.message.content).toBe('served by the OpenAI fallback')
    expect(response.headers.get('x-svc-upstream')).toBe('gpt')
    expect(anthropic.seen.length).toBe(before)
    expect(openaiFallback.requests.at(-1)!.body.messages).toEqual(audio)
  })

  test("Anthropic's errors: a 400 keeps its status and message; 529 overloaded is retried, then 502; an error event ends the stream with no [DONE]", async () => {
    const send = (content: string, stream = false) =>
      fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${gateway.firstKey}` },
        body: JSON.stringify({ model: 'claude/fast', messages: [{ role: 'user', content }], stream }),
      })
    const bad = await send('bad')
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ error: { type: 'invalid_request_error', message: 'messages: text content blocks must be non-empty' } })
    const before = anthropic.seen.length
    const overloaded = await send('overloaded')
    expect(overloaded.status).toBe(502)
    expect(((await overloaded.json()) as { error: { type: string } }).error.type).toBe('upstream_error')
    expect(anthropic.seen.length - before).toBe(2)
    const events = (await (await send('stream-error', true)).text()).split('\n\n').filter(Boolean)
    expect(events.some((e) => e.includes('[DONE]'))).toBe(false)
    expect(JSON.parse(events.at(-1)!.slice('data: '.length))).toMatchObject({ error: { type: 'upstream_error', code: 'upstream_stream_error' } })
  })

  test('structured output: json_schema comes back as JSON content, and the JSON tool never reaches the caller', async () => {
    const person = { type: 'object', properties: { location: { type: 'string' }, unit: { type: 'string' } } }
    const completion = await client.chat.completions.create({
      model: 'claude/fast',
      messages: [{ role: 'user', content: 'Give me a place as JSON' }],
      response_format: { type: 'json_schema', json_schema: { name: 'place', schema: person } },
    })
    const sent = anthropic.seen.at(-1)!.body
    expect(sent.tools).toEqual([expect.objectContaining({ name: 'chatgate_json_response', input_schema: person })])
    expect(sent.tool_choice).toEqual({ type: 'tool', name: 'chatgate_json_response' })
    // The fake called the forced tool with the docs example's input: that input is the answer's content.
    expect(JSON.parse(completion.choices[0]!.message.content!)).toEqual(TOOL_USE.input)
    expect(completion.choices[0]!.message.tool_calls).toBeUndefined()
    expect(completion.choices[0]!.finish_reason).toBe('stop')
    expect(schemaErrors('CreateChatCompletionResponse', completion)).toBeNull()
  })
})
