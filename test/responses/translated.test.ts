/**
 * Translated targets on a real gateway process: an OpenAI-compatible chat upstream (the strict fake
 * of test/support/fakes/openai.ts, written from https://platform.openai.com/docs/api-reference/chat,
 * so a field that leaks through the translation is a 400), an Anthropic upstream (the fake of
 * test/support/fakes/anthropic.ts, from https://docs.anthropic.com/en/api/messages and
 * messages-streaming), a chat upstream answering with OpenAI's published fixtures (parallel calls,
 * usage with cached and reasoning tokens), a chat upstream that cuts its stream, and the mock.
 * Every Response and stream event is checked against OpenAI's published OpenAPI document; one stream
 * is read by the openai SDK's own helper. Hosted tools: Anthropic's web search, dropped, refused.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import OpenAI from 'openai'
import { ADMIN_KEY, createKey } from '../support/cluster'
import { fakeAnthropic, type FakeAnthropic } from '../support/fakes/anthropic'
import { fakeOpenAI, type FakeOpenAI } from '../support/fakes/openai'
import { faultServer, type FaultServer } from '../support/faults'
import { fixture, fixtureText } from '../support/fixtures'
import { tempDir, writeConfig } from '../support/gateway'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { openapiErrors } from '../support/openapi'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { fakeUpstream, type FakeUpstream, openaiStream } from '../support/upstream'
import { checkedStream, created, OPEN_TIER, postJson, type SseEvent, types } from './helpers'

setDefaultTimeout(TEST_MS)

type Json = Record<string, any>

/** Usage with cached and reasoning tokens, in the shape of https://platform.openai.com/docs/api-reference/chat/object (`usage`). */
const DETAILED_USAGE = {
  prompt_tokens: 1001,
  completion_tokens: 333,
  total_tokens: 1334,
  prompt_tokens_details: { cached_tokens: 500 },
  completion_tokens_details: { reasoning_tokens: 200 },
}

/**
 * A chat upstream answering with OpenAI's published fixtures (test/fixtures/openai/, sources cited
 * there): two parallel calls of get_current_weather until the tools have answered, then text with
 * DETAILED_USAGE; streamed as the fixture transcript, or as text chunks with a usage chunk.
 */
function fixtureUpstream(): FakeUpstream {
  const calls = fixture('openai/response-tool-calls.json').response
  const callStream = fixtureText('openai/stream-tool-calls.sse')
    .split('\n')
    .filter((line) => !line.startsWith(':'))
    .join('\n')
    .trim()
  return fakeUpstream((request) => {
    const answered = (request.body.messages as Json[]).some((m) => m.role === 'tool')
    const model = String(request.body.model)
    if (request.body.stream) {
      return answered
        ? openaiStream(model, ['Sunny', ' in both.'], DETAILED_USAGE as never)
        : new Response(`${callStream}\n\n`, { headers: { 'content-type': 'text/event-stream' } })
    }
    if (!answered) return Response.json({ ...calls, model })
    return Response.json({
      id: 'chatcmpl-final',
      object: 'chat.completion',
      created: 1_700_000_000,
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: 'Sunny in both.', refusal: null }, logprobs: null, finish_reason: 'stop' }],
      usage: DETAILED_USAGE,
    })
  })
}

const config = (chat: string, anthropic: string, fixtures: string, faults: string) => `
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

[upstreams.fixtures]
kind = "openai"
base_url = "${fixtures}"

[upstreams.faults]
kind = "openai"
base_url = "${faults}"
max_retries = 0

[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]

[aliases."chat/gpt"]
targets = [{ upstream = "chat", model = "gpt-4o" }]

[aliases."chat/strict"]
hosted_tools = "refuse"
targets = [{ upstream = "chat", model = "gpt-4o" }]

[aliases."claude/sonnet"]
targets = [{ upstream = "claude", model = "claude-sonnet-4-5" }]

[aliases."claude/strict"]
hosted_tools = "refuse"
targets = [{ upstream = "claude", model = "claude-sonnet-4-5" }]

[aliases."fixtures/parallel"]
targets = [{ upstream = "fixtures", model = "gpt-4o-mini" }]

[aliases."faults/cut"]
targets = [{ upstream = "faults", model = "m" }]
`

const WEATHER = {
  type: 'function',
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  strict: true,
}

const dir = tempDir()
let gateway: GatewayProcess
let chat: FakeOpenAI
let claude: FakeAnthropic
let fixtures: FakeUpstream
let faults: FaultServer
let key: string

setup(async () => {
  chat = fakeOpenAI({ toolInput: (name) => (name === 'apply_patch' ? { input: '*** Begin Patch\n*** End Patch' } : { city: 'Boston' }) })
  claude = fakeAnthropic({ toolInput: () => ({ city: 'Paris' }) })
  fixtures = fixtureUpstream()
  faults = faultServer()
  gateway = await spawnGateway({
    GATEWAY_DB: `${dir.path}/gateway.sqlite`,
    GATEWAY_CONFIG: writeConfig(dir.path, config(chat.url, claude.url, fixtures.url, faults.url)),
    GATEWAY_ADMIN_KEY: ADMIN_KEY,
    FAKE_OPENAI_KEY: 'sk-openai-fake',
    FAKE_ANTHROPIC_KEY: 'sk-ant-fake',
  })
  key = (await createKey(gateway.url, { name: 'translated', tier: 'open' })).key
})

teardown(async () => {
  await gateway.stop()
  for (const fake of [chat, claude, fixtures, faults]) fake.stop()
  dir[Symbol.dispose]()
})

const post = (body: unknown) => postJson(gateway.url, key, body)

/** A created Response, valid against the document. */
async function valid(response: Response): Promise<Json> {
  const body = await created(response)
  expect(openapiErrors('Response', body)).toBeNull()
  return body
}

/** The function-call arguments a stream sent for each item, its deltas joined, and what its done event and item said. */
function argumentsOf(events: SseEvent[]) {
  const out = new Map<string, { deltas: string; done: string; item: string; name: string }>()
  for (const { data } of events) {
    if (data.type === 'response.output_item.added' && data.item.type === 'function_call')
      out.set(data.item.id, { deltas: '', done: '', item: '', name: data.item.name })
    if (data.type === 'response.function_call_arguments.delta') out.get(data.item_id)!.deltas += data.delta
    if (data.type === 'response.function_call_arguments.done') out.get(data.item_id)!.done = data.arguments
    if (data.type === 'response.output_item.done' && data.item.type === 'function_call') out.get(data.item.id)!.item = data.item.arguments
  }
  return [...out.values()]
}

describe('to an OpenAI-compatible chat upstream', () => {
  test('instructions, system and developer items, every input item type, tools, tool_choice, text.format, reasoning, limits: the chat request it gets', async () => {
    const schema = {
      type: 'object',
      properties: { boston: { type: 'string' }, paris: { type: 'string' } },
      required: ['boston', 'paris'],
      additionalProperties: false,
    }
    const request = {
      model: 'chat/gpt',
      instructions: 'Answer in JSON.',
      input: [
        { type: 'message', role: 'system', content: 'You are terse.' },
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Use metric units.' }] },
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: 'Weather in Boston and Paris? See the map and the report.' },
            { type: 'input_image', image_url: 'https://example.com/map.png', detail: 'original' },
            { type: 'input_file', filename: 'report.pdf', file_data: 'data:application/pdf;base64,JVBERi0xLjQK' },
          ],
        },
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Two cities: call twice.' }] },
        {
          type: 'message',
          role: 'assistant',
          content: [
            { type: 'output_text', text: 'Checking both.' },
            { type: 'refusal', refusal: 'No forecasts beyond today.' },
          ],
        },
        { type: 'function_call', call_id: 'call_b', name: 'get_weather', arguments: '{"city":"Boston"}' },
        { type: 'function_call', call_id: 'call_p', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call_output', call_id: 'call_p', output: '18C' },
        { type: 'function_call_output', call_id: 'call_b', output: [{ type: 'input_text', text: '12C' }] },
      ],
      tools: [WEATHER],
      tool_choice: { type: 'function', name: 'get_weather' },
      parallel_tool_calls: true,
      text: { format: { type: 'json_schema', name: 'report', schema, strict: true } },
      reasoning: { effort: 'low', summary: 'auto' },
      max_output_tokens: 300,
      temperature: 0.5,
      top_p: 0.9,
      user: 'u-1',
      metadata: { run: '1' },
      store: false,
    }
    const response = await post(request)
    const body = await valid(response)
    const sent = chat.chatCalls().at(-1)!.body
    expect(sent).toEqual({
      model: 'gpt-4o',
      messages: [
        { role: 'system', content: 'Answer in JSON.' },
        { role: 'system', content: 'You are terse.' },
        { role: 'system', content: 'Use metric units.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather in Boston and Paris? See the map and the report.' },
            { type: 'image_url', image_url: { url: 'https://example.com/map.png', detail: 'high' } },
            { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0xLjQK', filename: 'report.pdf' } },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Checking both.' },
            { type: 'refusal', refusal: 'No forecasts beyond today.' },
          ],
          reasoning_content: 'Two cities: call twice.',
          tool_calls: [
            { id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Boston"}' } },
            { id: 'call_p', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_p', content: '18C' },
        { role: 'tool', tool_call_id: 'call_b', content: '12C' },
      ],
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters: WEATHER.parameters, strict: true } }],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: true,
      response_format: { type: 'json_schema', json_schema: { name: 'report', schema, strict: true } },
      reasoning_effort: 'low',
      max_completion_tokens: 300,
      temperature: 0.5,
      top_p: 0.9,
      user: 'u-1',
    })
    expect(response.headers.get('x-svc-dropped')).toBeNull()

    // The answer: the reasoning as its summary (asked for), the JSON text, every setting echoed, usage with reasoning tokens.
    const completion = chat.completions.at(-1)!
    const reasoning = completion.choices[0].message.reasoning_content as string
    expect(body.output).toEqual([
      { type: 'reasoning', id: expect.stringMatching(/^rs_/), summary: [{ type: 'summary_text', text: reasoning }] },
      expect.objectContaining({ type: 'message', role: 'assistant', status: 'completed' }),
    ])
    expect(JSON.parse(body.output[1].content[0].text)).toEqual({ boston: 'sample boston', paris: 'sample paris' })
    expect(body).toMatchObject({
      model: 'chat/gpt',
      instructions: 'Answer in JSON.',
      text: { format: request.text.format },
      tool_choice: request.tool_choice,
      parallel_tool_calls: true,
      temperature: 0.5,
      top_p: 0.9,
      max_output_tokens: 300,
      store: false,
      metadata: { run: '1' },
      reasoning: { effort: 'low', summary: 'auto' },
    })
    expect(body.tools).toEqual([WEATHER])
    expect(body.usage).toEqual({
      input_tokens: completion.usage.prompt_tokens,
      input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      output_tokens: completion.usage.completion_tokens,
      output_tokens_details: { reasoning_tokens: completion.usage.completion_tokens_details.reasoning_tokens },
      total_tokens: completion.usage.total_tokens,
    })
    expect(body.usage.output_tokens_details.reasoning_tokens).toBeGreaterThan(0)
  })

  test('a tool call answered as a function_call item (call id kept); streamed, its argument deltas reassemble exactly', async () => {
    const json = await valid(await post({ model: 'chat/gpt', input: 'weather?', tools: [WEATHER] }))
    const issued = chat.completions.at(-1)!.choices[0].message.tool_calls[0]
    expect(json.output).toEqual([
      {
        type: 'function_call',
        id: expect.stringMatching(/^fc_/),
        call_id: issued.id,
        name: 'get_weather',
        arguments: issued.function.arguments,
        status: 'completed',
      },
    ])

    const response = await post({ model: 'chat/gpt', input: 'weather?', tools: [WEATHER], stream: true })
    const events = checkedStream(await response.text())
    const streamed = chat.completions.at(-1)!.choices[0].message.tool_calls[0]
    expect(argumentsOf(events)).toEqual([
      { deltas: streamed.function.arguments, done: streamed.function.arguments, item: streamed.function.arguments, name: 'get_weather' },
    ])
    expect(events.filter((e) => e.data.type === 'response.function_call_arguments.delta').length).toBeGreaterThan(1)
    expect(events.at(-1)!.data.response.output).toEqual([expect.objectContaining({ type: 'function_call', call_id: streamed.id })])
  })

  test('Codex’s tools: a custom (freeform) tool is a function of one string `input` and comes back as custom_tool_call; namespace tools are flattened and restored', async () => {
    const patch = {
      type: 'custom',
      name: 'apply_patch',
      description: 'Apply a patch',
      format: { type: 'grammar', syntax: 'lark', definition: 'start: "*** Begin Patch"' },
    }
    const shell = {
      type: 'namespace',
      name: 'shell',
      description: 'Shell tools',
      tools: [{ type: 'function', name: 'run', description: 'Run a command', parameters: { type: 'object' } }],
    }
    const body = await valid(await post({ model: 'chat/gpt', input: 'fix it [[call:apply_patch]]', tools: [patch, shell] }))
    const sent = chat.chatCalls().at(-1)!.body
    expect(sent.tools.map((tool: Json) => tool.function.name)).toEqual(['apply_patch', 'shell__run'])
    expect(sent.tools[0].function.parameters).toMatchObject({ type: 'object', properties: { input: { type: 'string' } }, required: ['input'] })
    expect(body.output).toEqual([
      {
        type: 'custom_tool_call',
        id: expect.stringMatching(/^ctc_/),
        call_id: expect.any(String),
        name: 'apply_patch',
        input: '*** Begin Patch\n*** End Patch',
      },
    ])
    const namespaced = await valid(await post({ model: 'chat/gpt', input: 'list [[call:shell__run]]', tools: [patch, shell] }))
    expect(namespaced.output).toEqual([expect.objectContaining({ type: 'function_call', namespace: 'shell', name: 'run' })])
    // Their outputs go back matched by call_id, under the flattened names.
    const input = [{ role: 'user', content: 'fix it' }, ...body.output, { type: 'custom_tool_call_output', call_id: body.output[0].call_id, output: 'Done!' }]
    const final = await valid(await post({ model: 'chat/gpt', input, tools: [patch, shell] }))
    expect(final.output[0].content[0].text).toContain('(the tool said: Done!)')
    expect(chat.chatCalls().at(-1)!.body.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: body.output[0].call_id,
            type: 'function',
            function: { name: 'apply_patch', arguments: JSON.stringify({ input: '*** Begin Patch\n*** End Patch' }) },
          },
        ],
      },
      { role: 'tool', tool_call_id: body.output[0].call_id, content: 'Done!' },
    ])
  })

  test('parallel calls (OpenAI’s fixture): one item each, deltas reassemble per call; their outputs go back as one assistant message with both calls', async () => {
    const fixtureCalls = fixture('openai/response-tool-calls.json').response.choices[0].message.tool_calls as Json[]
    const json = await valid(await post({ model: 'fixtures/parallel', input: 'Weather in Boston and San Francisco?', tools: [WEATHER] }))
    expect(json.output.map((item: Json) => [item.type, item.call_id, item.arguments])).toEqual(
      fixtureCalls.map((call) => ['function_call', call.id, call.function.arguments]),
    )

    const events = checkedStream(await (await post({ model: 'fixtures/parallel', input: 'Weather?', tools: [WEATHER], stream: true })).text())
    expect(argumentsOf(events).map((call) => call.deltas)).toEqual(['{"location": "Boston, MA"}', '{"location": "San Francisco, CA", "unit": "celsius"}'])
    for (const call of argumentsOf(events)) expect(call.done === call.deltas && call.item === call.deltas).toBe(true)

    // Stateless, as Codex sends it: the output items back with their outputs.
    const input = [
      { role: 'user', content: 'Weather in Boston and San Francisco?' },
      ...json.output,
      ...json.output.map((item: Json, i: number) => ({ type: 'function_call_output', call_id: item.call_id, output: `${10 + i}C` })),
    ]
    const final = await valid(await post({ model: 'fixtures/parallel', input, tools: [WEATHER] }))
    const sent = fixtures.requests.at(-1)!.body.messages as Json[]
    expect(sent.slice(1)).toEqual([
      { role: 'assistant', content: null, tool_calls: fixtureCalls.map(({ id, type, function: fn }) => ({ id, type, function: fn })) },
      { role: 'tool', tool_call_id: fixtureCalls[0]!.id, content: '10C' },
      { role: 'tool', tool_call_id: fixtureCalls[1]!.id, content: '11C' },
    ])
    // Usage with cached and reasoning tokens, JSON and streamed alike.
    const usage = {
      input_tokens: 1001,
      input_tokens_details: { cached_tokens: 500, cache_write_tokens: 0 },
      output_tokens: 333,
      output_tokens_details: { reasoning_tokens: 200 },
      total_tokens: 1334,
    }
    expect(final.usage).toEqual(usage)
    const streamed = checkedStream(await (await post({ model: 'fixtures/parallel', input, tools: [WEATHER], stream: true })).text())
    expect(streamed.at(-1)!.data.response.usage).toEqual(usage)
  })

  test('an upstream stream cut mid-way: response.failed, never response.completed', async () => {
    const response = await post({ model: 'faults/cut', input: 'reset-stream:3', stream: true })
    expect(response.status).toBe(200)
    const events = checkedStream(await response.text())
    expect(types(events).slice(0, 2)).toEqual(['response.created', 'response.in_progress'])
    expect(types(events)).toContain('response.output_text.delta')
    expect(types(events).at(-1)).toBe('response.failed')
    expect(types(events)).not.toContain('response.completed')
    expect(events.at(-1)!.data.response).toMatchObject({ status: 'failed', error: { code: 'server_error' } })
  })
})

describe('to an Anthropic upstream', () => {
  test('instructions, developer text, an image and a PDF, tools, tool_choice, reasoning effort, max_output_tokens: the Messages request; thinking and the call come back', async () => {
    const request = {
      model: 'claude/sonnet',
      instructions: 'Be brief.',
      input: [
        { role: 'developer', content: 'Use metric units.' },
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Weather where the map shows?' },
            { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=' },
            { type: 'input_file', filename: 'report.pdf', file_data: 'data:application/pdf;base64,JVBERi0xLjQK' },
          ],
        },
      ],
      tools: [WEATHER],
      tool_choice: 'auto',
      reasoning: { effort: 'medium', summary: 'detailed' },
      max_output_tokens: 9000,
      include: ['reasoning.encrypted_content'],
    }
    const body = await valid(await post(request))
    const sent = claude.messageCalls().at(-1)!.body
    expect(sent).toMatchObject({
      model: 'claude-sonnet-4-5',
      system: [
        { type: 'text', text: 'Be brief.' },
        { type: 'text', text: 'Use metric units.' },
      ],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather where the map shows?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
            { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0xLjQK' }, title: 'report.pdf' },
          ],
        },
      ],
      tools: [{ name: 'get_weather', description: 'Weather for a city', input_schema: WEATHER.parameters }],
      tool_choice: { type: 'auto' },
      thinking: { type: 'enabled' },
      max_tokens: 9000,
    })
    expect(sent.thinking.budget_tokens).toBeLessThan(9000)
    const answer = claude.answered.at(-1)!
    expect(body.output).toEqual([
      {
        type: 'reasoning',
        id: expect.stringMatching(/^rs_/),
        summary: [{ type: 'summary_text', text: expect.stringContaining('fake-anthropic-a thought') }],
        encrypted_content: expect.any(String),
      },
      {
        type: 'function_call',
        id: expect.stringMatching(/^fc_/),
        call_id: expect.stringContaining(answer.replace('msg_', 'toolu_').replace(/_\d+$/, '')),
        name: 'get_weather',
        arguments: '{"city":"Paris"}',
        status: 'completed',
      },
    ])
  })

  test('streamed: reasoning summary deltas, then the call’s argument deltas that reassemble; the openai SDK’s stream helper reads it whole', async () => {
    const request = { model: 'claude/sonnet', input: 'weather?', tools: [WEATHER], reasoning: { effort: 'low', summary: 'auto' }, stream: true }
    const events = checkedStream(await (await post(request)).text())
    const summary = events.filter((e) => e.data.type === 'response.reasoning_summary_text.delta').map((e) => e.data.delta as string)
    expect(summary.join('')).toMatch(/^fake-anthropic-a thought \d+ about it$/)
    expect(events.find((e) => e.data.type === 'response.reasoning_summary_text.done')!.data.text).toBe(summary.join(''))
    expect(argumentsOf(events)).toEqual([{ deltas: '{"city":"Paris"}', done: '{"city":"Paris"}', item: '{"city":"Paris"}', name: 'get_weather' }])
    expect(types(events).indexOf('response.reasoning_summary_text.delta')).toBeLessThan(types(events).indexOf('response.function_call_arguments.delta'))

    const client = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    const runner = client.responses.stream({
      model: 'claude/sonnet',
      input: 'weather?',
      tools: [WEATHER as never],
      reasoning: { effort: 'low', summary: 'auto' },
    })
    const final = await runner.finalResponse()
    expect(final.output.map((item) => item.type)).toEqual(['reasoning', 'function_call'])
    expect(final.model).toBe('claude/sonnet')
  })
})

describe('to the mock', () => {
  test('a tool loop: tool_choice required calls the first tool; its output gets the answer', async () => {
    const first = await valid(
      await post({ model: 'local/echo', instructions: 'be brief', input: 'weather in Paris', tools: [WEATHER], tool_choice: 'required' }),
    )
    expect(first.output).toEqual([expect.objectContaining({ type: 'function_call', call_id: 'call_mock_1', name: 'get_weather', arguments: '{}' })])
    const input = [{ role: 'user', content: 'weather in Paris' }, ...first.output, { type: 'function_call_output', call_id: 'call_mock_1', output: '18C' }]
    const second = await valid(await post({ model: 'local/echo', input, tools: [WEATHER] }))
    expect(second.output).toEqual([expect.objectContaining({ type: 'message', content: [expect.objectContaining({ text: 'weather in Paris' })] })])
    const limited = await valid(await post({ model: 'local/echo', input: 'a b c d', max_output_tokens: 16 }))
    expect(limited.max_output_tokens).toBe(16)
  })
})

describe('hosted tools', () => {
  const search = { type: 'web_search', search_context_size: 'low', user_location: { type: 'approximate', city: 'Paris', country: 'FR' } }

  test('web_search on an Anthropic target becomes Anthropic’s web-search server tool; nothing is dropped', async () => {
    const response = await post({ model: 'claude/sonnet', input: 'news?', tools: [WEATHER, search] })
    const body = await valid(response)
    expect(claude.messageCalls().at(-1)!.body.tools).toEqual([
      { name: 'get_weather', description: 'Weather for a city', input_schema: WEATHER.parameters },
      { type: 'web_search_20250305', name: 'web_search', user_location: { type: 'approximate', city: 'Paris', country: 'FR' } },
    ])
    expect(response.headers.get('x-svc-dropped') ?? '').not.toContain('web_search')
    expect(body.tools).toEqual([WEATHER, search])
    // With hosted_tools = "refuse" too: Anthropic runs it.
    expect((await post({ model: 'claude/strict', input: 'news?', tools: [search] })).status).toBe(200)
  })

  test('elsewhere they are removed, and x-svc-dropped names each by its type', async () => {
    const before = chat.chatCalls().length
    const response = await post({ model: 'chat/gpt', input: 'news?', tools: [search, WEATHER, { type: 'file_search', vector_store_ids: ['vs_1'] }] })
    await valid(response)
    expect(chat.chatCalls().length).toBe(before + 1)
    const sent = chat.chatCalls().at(-1)!.body
    expect(sent.tools).toEqual([
      { type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters: WEATHER.parameters, strict: true } },
    ])
    expect(sent.web_search_options).toBeUndefined()
    expect(response.headers.get('x-svc-dropped')!.split(/,\s*/)).toEqual(expect.arrayContaining(['web_search', 'file_search']))

    const mock = await post({ model: 'local/echo', input: 'news?', tools: [search] })
    await valid(mock)
    expect(mock.headers.get('x-svc-dropped')).toContain('web_search')
  })

  test('hosted_tools = "refuse": 400 unsupported_parameter naming tools[i], and the upstream is not called', async () => {
    const before = chat.chatCalls().length
    const response = await post({ model: 'chat/strict', input: 'news?', tools: [WEATHER, search] })
    expect(response.status).toBe(400)
    const { error } = (await response.json()) as { error: Json }
    expect(error).toMatchObject({ type: 'invalid_request_error', code: 'unsupported_parameter' })
    expect(error.param).toMatch(/^tools(\.1|\[1\])$/)
    expect(error.message).toContain('web_search')
    const onAnthropic = await post({ model: 'claude/strict', input: 'run it', tools: [{ type: 'code_interpreter', container: { type: 'auto' } }] })
    expect(onAnthropic.status).toBe(400)
    expect(((await onAnthropic.json()) as { error: Json }).error.param).toMatch(/^tools(\.0|\[0\])$/)
    expect(chat.chatCalls().length).toBe(before)
  })
})
