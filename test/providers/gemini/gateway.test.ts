/**
 * `kind = "gemini"` on a real gateway process, against the fake Gemini API of
 * test/support/fakes/gemini.ts (written from https://ai.google.dev/api/generate-content,
 * https://ai.google.dev/api/embeddings, https://ai.google.dev/api/tokens and
 * https://ai.google.dev/gemini-api/docs/thought-signatures) and the fake Anthropic API (for a
 * fallback): every inbound API, JSON and streamed; the request Google gets, field by field; thought
 * signatures back on their parts next turn; usage and cost exact; safety blocks as each dialect's
 * filter answer; Google's errors mapped; retries, fallbacks, circuits, limits and budgets.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { ADMIN_KEY, createKey } from '../../support/cluster'
import { fakeAnthropic, type FakeAnthropic } from '../../support/fakes/anthropic'
import { fakeGemini, type FakeGemini, GEMINI_MARKER, SKIP_SIGNATURE } from '../../support/fakes/gemini'
import { tempDir, writeConfig } from '../../support/gateway'
import { setup, teardown, TEST_MS } from '../../support/hooks'
import { type GatewayProcess, spawnGateway } from '../../support/process'
import { OPEN_TIER, sseEvents } from '../../responses/helpers'

setDefaultTimeout(TEST_MS)

type Json = Record<string, any>

const PRICE = 'price = { input = 0.3, output = 2.5, cached_input = 0.075 }'

const config = (gemini: string, flaky: string, claude: string) => `
${OPEN_TIER}
[tiers.tight]
requests_per_minute = 2
tokens_per_minute = 1000000
max_concurrent = 10

[tiers.budget]
requests_per_minute = 1000
tokens_per_minute = 1000000
max_concurrent = 10
daily_budget_usd = 0.00001

[upstreams.gem]
kind = "gemini"
base_url = "${gemini}"
api_key_env = "GEMINI_KEY"

[upstreams.flaky]
kind = "gemini"
base_url = "${flaky}"
api_key_env = "GEMINI_KEY"
max_retries = 1
failure_threshold = 2
cooldown_ms = 600000

# The same server as flaky, for the refusals that count against a circuit: flaky's stays closed.
[upstreams.denied]
kind = "gemini"
base_url = "${flaky}"
api_key_env = "GEMINI_KEY"

[upstreams.badkey]
kind = "gemini"
base_url = "${gemini}"
api_key_env = "WRONG_GEMINI_KEY"

[upstreams.claude]
kind = "anthropic"
base_url = "${claude}"
api_key_env = "FAKE_ANTHROPIC_KEY"

[aliases."gem/flash"]
targets = [{ upstream = "gem", model = "gemini-2.5-flash", ${PRICE} }]

[aliases."gem/embed"]
targets = [{ upstream = "gem", model = "gemini-embedding-001" }]

[aliases."gem/flaky"]
targets = [{ upstream = "flaky", model = "gemini-2.5-flash" }]

# A 429 with a retry delay rests its target (upstream and model): the quota case has a target of its own.
[aliases."gem/limited"]
targets = [{ upstream = "flaky", model = "gemini-2.5-flash-lite" }]

[aliases."gem/fallback"]
targets = [{ upstream = "flaky", model = "gemini-2.5-pro" }, { upstream = "claude", model = "claude-sonnet-4-5" }]

[aliases."gem/denied"]
targets = [{ upstream = "denied", model = "gemini-2.5-flash" }]

[aliases."gem/badkey"]
targets = [{ upstream = "badkey", model = "gemini-2.5-flash" }]
`

const dir = tempDir()
let gateway: GatewayProcess
let gemini: FakeGemini
let flaky: FakeGemini
let claude: FakeAnthropic
let key: string

setup(async () => {
  gemini = fakeGemini()
  flaky = fakeGemini({ name: 'flaky' })
  claude = fakeAnthropic({ toolInput: () => ({ city: 'Paris' }) })
  gateway = await spawnGateway({
    GATEWAY_DB: `${dir.path}/gateway.sqlite`,
    GATEWAY_CONFIG: writeConfig(dir.path, config(gemini.url, flaky.url, claude.url)),
    GATEWAY_ADMIN_KEY: ADMIN_KEY,
    GEMINI_KEY: 'gemini-fake-key',
    WRONG_GEMINI_KEY: 'not-the-key',
    FAKE_ANTHROPIC_KEY: 'sk-ant-fake',
  })
  key = (await createKey(gateway.url, { name: 'gemini', tier: 'open' })).key
})

teardown(async () => {
  await gateway.stop()
  for (const fake of [gemini, flaky, claude]) fake.stop()
  dir[Symbol.dispose]()
})

const post = (path: string, body: unknown, as = key) =>
  fetch(`${gateway.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${as}`, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  })

async function ok(response: Response): Promise<Json> {
  const text = await response.text()
  expect({ status: response.status, text: response.status === 200 ? '' : text }).toEqual({ status: 200, text: '' })
  return JSON.parse(text)
}

const WEATHER = {
  type: 'function',
  function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
}
const TIME = { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }
const lastBody = (fake = gemini) => fake.generateCalls().at(-1)!.body
const lastAnswer = (fake = gemini) => fake.model.answers.at(-1)!

/** The pivot usage Google's usageMetadata makes: thoughts in completion and reasoning, cached content in cached tokens. */
function usageOf(metadata: Json) {
  const completion = metadata.candidatesTokenCount + (metadata.thoughtsTokenCount ?? 0)
  return {
    prompt_tokens: metadata.promptTokenCount,
    completion_tokens: completion,
    total_tokens: metadata.promptTokenCount + completion,
    prompt_tokens_details: { cached_tokens: metadata.cachedContentTokenCount },
    completion_tokens_details: { reasoning_tokens: metadata.thoughtsTokenCount ?? 0 },
  }
}

/** Chat SSE as its chunks. */
const chunksOf = (text: string): Json[] => sseEvents(text).flatMap((e) => (e.data ? [e.data] : []))

describe('chat completions', () => {
  test('the generateContent request Google gets, field by field', async () => {
    const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] }
    await ok(
      await post('/v1/chat/completions', {
        model: 'gem/flash',
        messages: [
          { role: 'system', content: 'Be terse.' },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Look:' },
              { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
              { type: 'image_url', image_url: { url: 'https://example.com/map.jpg' } },
              { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0xLjQK', filename: 'r.pdf' } },
              { type: 'file', file: { file_id: 'gs://bucket/report.pdf' } },
            ],
          },
          { role: 'assistant', content: 'Seen.' },
          { role: 'system', content: 'Mind the units.' },
          { role: 'user', content: 'Answer.' },
        ],
        tools: [WEATHER, TIME],
        tool_choice: { type: 'function', function: { name: 'get_time' } },
        response_format: { type: 'json_schema', json_schema: { name: 'a', schema } },
        reasoning_effort: 'medium',
        max_completion_tokens: 500,
        temperature: 0.4,
        top_p: 0.9,
        stop: ['END'],
        seed: 7,
        user: 'u-1',
      }),
    )
    expect(lastBody()).toEqual({
      systemInstruction: { parts: [{ text: 'Be terse.' }] },
      contents: [
        {
          role: 'user',
          parts: [
            { text: 'Look:' },
            { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } },
            { fileData: { mimeType: 'image/jpeg', fileUri: 'https://example.com/map.jpg' } },
            { inlineData: { mimeType: 'application/pdf', data: 'JVBERi0xLjQK' } },
            { fileData: { mimeType: 'application/pdf', fileUri: 'gs://bucket/report.pdf' } },
          ],
        },
        { role: 'model', parts: [{ text: 'Seen.' }] },
        { role: 'user', parts: [{ text: '<system-reminder>\nMind the units.\n</system-reminder>' }, { text: 'Answer.' }] },
      ],
      tools: [
        {
          functionDeclarations: [
            { name: 'get_weather', description: 'Weather for a city', parametersJsonSchema: WEATHER.function.parameters },
            { name: 'get_time', parametersJsonSchema: TIME.function.parameters },
          ],
        },
      ],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_time'] } },
      generationConfig: {
        maxOutputTokens: 500,
        temperature: 0.4,
        topP: 0.9,
        stopSequences: ['END'],
        seed: 7,
        responseMimeType: 'application/json',
        responseJsonSchema: schema,
        thinkingConfig: { thinkingBudget: 8192, includeThoughts: true },
      },
    })
  })

  test('tool_choice none, auto and required; reasoning_effort none turns thinking off', async () => {
    const modes: Json[] = []
    for (const choice of ['none', 'auto', 'required']) {
      await ok(
        await post('/v1/chat/completions', {
          model: 'gem/flash',
          messages: [{ role: 'user', content: 'x' }],
          tools: [WEATHER],
          tool_choice: choice,
          reasoning_effort: 'none',
        }),
      )
      modes.push({ tool: lastBody().toolConfig, thinking: lastBody().generationConfig })
    }
    expect(modes).toEqual([
      { tool: { functionCallingConfig: { mode: 'NONE' } }, thinking: { thinkingConfig: { thinkingBudget: 0 } } },
      { tool: { functionCallingConfig: { mode: 'AUTO' } }, thinking: { thinkingConfig: { thinkingBudget: 0 } } },
      { tool: { functionCallingConfig: { mode: 'ANY' } }, thinking: { thinkingConfig: { thinkingBudget: 0 } } },
    ])
  })

  test('what Gemini cannot take is a 400 naming the field; hints it cannot use are named in x-svc-dropped', async () => {
    const refused = await post('/v1/chat/completions', { model: 'gem/flash', messages: [{ role: 'user', content: 'x' }], n: 2 })
    expect(refused.status).toBe(400)
    expect(((await refused.json()) as Json).error).toMatchObject({ param: 'n', code: 'unsupported_parameter' })
    const audio = await post('/v1/chat/completions', {
      model: 'gem/flash',
      messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-abc' } }] }],
    })
    expect(((await audio.json()) as Json).error).toMatchObject({ param: 'messages.0.content.0.file', code: 'unsupported_content' })
    const dropped = await post('/v1/chat/completions', {
      model: 'gem/flash',
      messages: [{ role: 'user', content: 'x' }],
      metadata: { a: '1' },
      parallel_tool_calls: false,
    })
    await ok(dropped)
    expect(dropped.headers.get('x-svc-dropped')).toBe('metadata, parallel_tool_calls')
  })

  test('a parallel tool loop: ids, thought summaries, signatures back on their parts next turn (JSON, then streamed); usage and cost exact', async () => {
    const messages: Json[] = [{ role: 'user', content: 'Weather and time in Paris? [[parallel]]' }]
    const first = await post('/v1/chat/completions', { model: 'gem/flash', messages, tools: [WEATHER, TIME], reasoning_effort: 'low' })
    const answer = await ok(first)
    const google = lastAnswer()
    const [call] = google.candidates[0].content.parts.filter((p: Json) => p.functionCall)
    const message = answer.choices[0].message
    expect(message.tool_calls.map((c: Json) => [c.id, c.function.name])).toEqual([
      [`call_${google.responseId}_0`, 'get_weather'],
      [`call_${google.responseId}_1`, 'get_time'],
    ])
    expect(message.reasoning_content).toBe('fake-gemini-g thought ' + gemini.model.answers.length)
    expect(message.thinking_blocks).toEqual([{ type: 'thinking', thinking: message.reasoning_content, signature: `cg1.gemini.c0.${call.thoughtSignature}` }])
    expect(answer.choices[0].finish_reason).toBe('tool_calls')
    expect(answer.usage).toEqual(usageOf(google.usageMetadata))
    // $0.30 / M uncached input, $0.075 / M cached, $2.50 / M output (thoughts included).
    const usage = google.usageMetadata
    const nanos =
      (usage.promptTokenCount - usage.cachedContentTokenCount) * 300 +
      usage.cachedContentTokenCount * 75 +
      (usage.candidatesTokenCount + usage.thoughtsTokenCount) * 2500
    expect(Math.round(Number(first.headers.get('x-svc-cost-usd')) * 1e9)).toBe(nanos)

    // The tool results in the other order: Gemini gets them in the calls' order, by name.
    messages.push(
      message,
      { role: 'tool', tool_call_id: message.tool_calls[1].id, content: '14:00' },
      { role: 'tool', tool_call_id: message.tool_calls[0].id, content: '{"temp":"12C"}' },
    )
    const second = await post('/v1/chat/completions', {
      model: 'gem/flash',
      messages,
      tools: [WEATHER, TIME],
      reasoning_effort: 'low',
      stream: true,
      stream_options: { include_usage: true },
    })
    expect(second.status).toBe(200)
    const sent = lastBody().contents
    expect(sent[1]).toEqual({
      role: 'model',
      parts: [
        { functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: call.thoughtSignature },
        { functionCall: { name: 'get_time', args: { city: 'Paris', n: 1 } } },
      ],
    })
    expect(sent[2]).toEqual({
      role: 'user',
      parts: [
        { functionResponse: { name: 'get_weather', response: { temp: '12C' } } },
        { functionResponse: { name: 'get_time', response: { output: '14:00' } } },
      ],
    })
    expect(gemini.model.returned.has(call.thoughtSignature)).toBe(true)
    const chunks = chunksOf(await second.text())
    const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')
    expect(text).toContain(GEMINI_MARKER)
    const blocks = chunks.flatMap((c) => c.choices[0]?.delta?.thinking_blocks ?? [])
    const textSignature = lastAnswer().candidates[0].content.parts.find((p: Json) => !p.thought).thoughtSignature
    expect(blocks).toEqual([{ type: 'thinking', thinking: '', signature: `cg1.gemini.t.${textSignature}` }])
    expect(chunks.at(-1)!.usage).toEqual(usageOf(lastAnswer().usageMetadata))

    // The text's signature goes back on the text, as a chat caller echoes the streamed message.
    messages.push({ role: 'assistant', content: text, thinking_blocks: blocks }, { role: 'user', content: 'Thanks.' })
    await ok(await post('/v1/chat/completions', { model: 'gem/flash', messages }))
    expect(lastBody().contents[3]).toEqual({ role: 'model', parts: [{ text, thoughtSignature: textSignature }] })
    expect(gemini.model.returned.has(textSignature)).toBe(true)
  })

  test("a tool call another model made gets Google's stand-in signature", async () => {
    const messages = [
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'toolu_01', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
      { role: 'tool', tool_call_id: 'toolu_01', content: 'cold' },
    ]
    await ok(await post('/v1/chat/completions', { model: 'gem/flash', messages, tools: [WEATHER] }))
    expect(lastBody().contents[1].parts).toEqual([{ functionCall: { name: 'get_weather', args: { city: 'Oslo' } }, thoughtSignature: SKIP_SIGNATURE }])
  })
})

describe('messages', () => {
  test('a tool loop, JSON then streamed: tool_use blocks, the signed thinking, exact usage', async () => {
    const tools = [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }]
    const first = await ok(await post('/v1/messages', { model: 'gem/flash', max_tokens: 300, tools, messages: [{ role: 'user', content: 'Weather?' }] }))
    expect(first.stop_reason).toBe('tool_use')
    const use = first.content.find((b: Json) => b.type === 'tool_use')
    expect(use).toMatchObject({ name: 'get_weather', input: { city: 'Paris' } })
    expect(first.content.find((b: Json) => b.type === 'thinking').signature).toStartWith('cg1.gemini.c0.')
    const google = lastAnswer().usageMetadata
    expect(first.usage).toEqual({
      input_tokens: google.promptTokenCount - google.cachedContentTokenCount,
      output_tokens: google.candidatesTokenCount + google.thoughtsTokenCount,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: google.cachedContentTokenCount,
    })
    const messages = [
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] },
    ]
    const second = await post('/v1/messages', { model: 'gem/flash', max_tokens: 300, tools, messages, stream: true })
    const events = sseEvents(await second.text()).map((e) => e.data)
    expect(events.at(-1)).toEqual({ type: 'message_stop' })
    const text = events
      .filter((e) => e.delta?.type === 'text_delta')
      .map((e) => e.delta.text)
      .join('')
    expect(text).toContain('(the tool said: {"output":"sunny"})')
    expect(lastBody().contents[2]).toEqual({ role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { output: 'sunny' } } }] })
  })

  test('messages: thought signatures back on their parts next turn, from the thinking block the caller hands back', async () => {
    const tools = [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }]
    const first = await ok(await post('/v1/messages', { model: 'gem/flash', max_tokens: 300, tools, messages: [{ role: 'user', content: 'Weather?' }] }))
    const use = first.content.find((b: Json) => b.type === 'tool_use')
    const signature = lastAnswer().candidates[0].content.parts.find((p: Json) => p.functionCall).thoughtSignature
    const messages = [
      { role: 'user', content: 'Weather?' },
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] },
    ]
    await ok(await post('/v1/messages', { model: 'gem/flash', max_tokens: 300, tools, messages }))
    expect(lastBody().contents[1].parts.find((p: Json) => p.functionCall)).toEqual({
      functionCall: { name: 'get_weather', args: { city: 'Paris' } },
      thoughtSignature: signature,
    })
    expect(signature).not.toBe(SKIP_SIGNATURE)
    expect(gemini.model.returned.has(signature)).toBe(true)
  })

  test("count_tokens is Google's :countTokens", async () => {
    const counted = await ok(
      await post('/v1/messages/count_tokens', { model: 'gem/flash', system: 'Be terse.', messages: [{ role: 'user', content: 'Count me.' }] }),
    )
    const call = gemini.calls.at(-1)!
    expect(call.path).toBe('/v1beta/models/gemini-2.5-flash:countTokens')
    expect(call.body).toEqual({
      generateContentRequest: {
        model: 'models/gemini-2.5-flash',
        systemInstruction: { parts: [{ text: 'Be terse.' }] },
        contents: [{ role: 'user', parts: [{ text: 'Count me.' }] }],
      },
    })
    expect(counted).toEqual({ input_tokens: gemini.model.promptTokens(call.body.generateContentRequest) })
  })
})

describe('responses', () => {
  test('a tool loop through previous_response_id, JSON then streamed: the signature comes back from the sealed reasoning', async () => {
    const tools = [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }]
    const first = await ok(await post('/v1/responses', { model: 'gem/flash', input: 'Weather?', tools, reasoning: { effort: 'low' } }))
    const call = first.output.find((item: Json) => item.type === 'function_call')
    const signature = lastAnswer().candidates[0].content.parts.find((p: Json) => p.functionCall).thoughtSignature
    const second = await post('/v1/responses', {
      model: 'gem/flash',
      previous_response_id: first.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: 'rainy' }],
      tools,
      stream: true,
    })
    const events = sseEvents(await second.text()).map((e) => e.data)
    expect(events.at(-1).type).toBe('response.completed')
    expect(lastBody().contents[1].parts[0]).toEqual({ functionCall: { name: 'get_weather', args: { city: 'Paris' } }, thoughtSignature: signature })
    expect(gemini.model.returned.has(signature)).toBe(true)
  })

  test('store: false with the encrypted reasoning sent back as an input item', async () => {
    const tools = [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }]
    const first = await ok(
      await post('/v1/responses', { model: 'gem/flash', input: 'Weather?', tools, store: false, include: ['reasoning.encrypted_content'] }),
    )
    const signature = lastAnswer().candidates[0].content.parts.find((p: Json) => p.functionCall).thoughtSignature
    const call = first.output.find((item: Json) => item.type === 'function_call')
    const input = [
      { type: 'message', role: 'user', content: 'Weather?' },
      ...first.output,
      { type: 'function_call_output', call_id: call.call_id, output: 'rainy' },
    ]
    await ok(await post('/v1/responses', { model: 'gem/flash', input, tools, store: false }))
    expect(lastBody().contents[1].parts[0].thoughtSignature).toBe(signature)
  })
})

describe('Gemini-native callers', () => {
  const native = (method: string, body: unknown, query = '') =>
    fetch(`${gateway.url}/v1beta/models/gem/flash:${method}${query}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': key },
      body: JSON.stringify(body),
    })

  test('the body as sent to :generateContent, :streamGenerateContent and :countTokens, the answer as Google wrote it', async () => {
    const body = { contents: [{ role: 'user', parts: [{ text: 'native hello' }] }], generationConfig: { temperature: 0.1 } }
    const answer = await ok(await native('generateContent', body))
    expect({ sent: lastBody(), text: answer.candidates[0].content.parts.at(-1).text }).toEqual({ sent: body, text: `${GEMINI_MARKER} heard: native hello` })
    const streamed = await native('streamGenerateContent', body, '?alt=sse')
    const events = sseEvents((await streamed.text()).replaceAll('\r\n', '\n')).flatMap((e) => (e.data ? [e.data] : []))
    expect(events.at(-1).candidates[0].finishReason).toBe('STOP')
    expect(gemini.generateCalls().at(-1)!.search).toBe('?alt=sse')
    const counted = await ok(await native('countTokens', { contents: body.contents }))
    expect(counted.totalTokens).toBeGreaterThan(0)
  })
})

describe('embeddings', () => {
  test(':batchEmbedContents, floats and base64, dimensions', async () => {
    const floats = await ok(await post('/v1/embeddings', { model: 'gem/embed', input: ['one', 'two'], dimensions: 4, encoding_format: 'float' }))
    expect(gemini.calls.at(-1)!.body).toEqual({
      requests: [
        { model: 'models/gemini-embedding-001', content: { parts: [{ text: 'one' }] }, outputDimensionality: 4 },
        { model: 'models/gemini-embedding-001', content: { parts: [{ text: 'two' }] }, outputDimensionality: 4 },
      ],
    })
    expect(floats.data.map((d: Json) => d.embedding.length)).toEqual([4, 4])
    const base64 = await ok(await post('/v1/embeddings', { model: 'gem/embed', input: 'one', dimensions: 4, encoding_format: 'base64' }))
    const decoded = Array.from(new Float32Array(Buffer.from(base64.data[0].embedding, 'base64').buffer.slice(0)))
    expect(decoded.map((v) => v.toFixed(5))).toEqual(floats.data[0].embedding.map((v: number) => v.toFixed(5)))
    expect(base64.usage).toEqual({ prompt_tokens: 1, total_tokens: 1 })
    const chat = await post('/v1/chat/completions', { model: 'gem/embed', messages: [{ role: 'user', content: 'x' }] })
    expect(chat.status).toBe(400)
  })
})

describe("safety blocks: each dialect's filter answer, never a 5xx", () => {
  test('a candidate stopped for SAFETY, and a blocked prompt: chat content_filter, messages refusal, responses incomplete', async () => {
    for (const marker of ['[[block:answer]]', '[[block:prompt]]']) {
      const chat = await ok(await post('/v1/chat/completions', { model: 'gem/flash', messages: [{ role: 'user', content: marker }] }))
      expect(chat.choices[0].finish_reason).toBe('content_filter')
      const streamed = chunksOf(
        await (await post('/v1/chat/completions', { model: 'gem/flash', messages: [{ role: 'user', content: marker }], stream: true })).text(),
      )
      expect(streamed.flatMap((c) => c.choices?.[0]?.finish_reason ?? [])).toEqual(['content_filter'])
      const messages = await ok(await post('/v1/messages', { model: 'gem/flash', max_tokens: 50, messages: [{ role: 'user', content: marker }] }))
      expect(messages.stop_reason).toBe('refusal')
      const events = sseEvents(
        await (await post('/v1/messages', { model: 'gem/flash', max_tokens: 50, messages: [{ role: 'user', content: marker }], stream: true })).text(),
      )
      expect(events.find((e) => e.data?.type === 'message_delta')!.data.delta.stop_reason).toBe('refusal')
      const response = await ok(await post('/v1/responses', { model: 'gem/flash', input: marker }))
      expect({ status: response.status, incomplete: response.incomplete_details }).toEqual({ status: 'incomplete', incomplete: { reason: 'content_filter' } })
    }
  })
})

describe('errors, retries, fallbacks, circuits, limits, budgets', () => {
  const ask = (model: string, as = key) => post('/v1/chat/completions', { model, messages: [{ role: 'user', content: 'hi' }] }, as)

  test('RESOURCE_EXHAUSTED is a 429 with the RetryInfo delay as Retry-After; INVALID_ARGUMENT a 400; PERMISSION_DENIED and a bad key a 502', async () => {
    const retryInfo = [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '37s' }]
    flaky.failNext(1, 429, 'RESOURCE_EXHAUSTED', 'You exceeded your current quota.', retryInfo)
    const limited = await ask('gem/limited')
    expect({ status: limited.status, retryAfter: limited.headers.get('retry-after') }).toEqual({ status: 429, retryAfter: '37' })
    flaky.failNext(1, 400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.')
    const invalid = await ask('gem/flaky')
    expect({ status: invalid.status, message: ((await invalid.json()) as Json).error.message }).toEqual({
      status: 400,
      message: 'Request contains an invalid argument.',
    })
    flaky.failNext(1, 403, 'PERMISSION_DENIED', 'Permission denied on resource project.')
    const denied = await ask('gem/denied')
    expect({ status: denied.status, code: ((await denied.json()) as Json).error.code }).toEqual({ status: 502, code: 'upstream_auth_failed' })
    const badKey = await ask('gem/badkey')
    expect({ status: badKey.status, code: ((await badKey.json()) as Json).error.code }).toEqual({ status: 502, code: 'upstream_auth_failed' })
  })

  test('UNAVAILABLE is retried, and a 503 once the retries are spent', async () => {
    flaky.failNext(1, 503, 'UNAVAILABLE', 'The model is overloaded. Please try again later.')
    const retried = await ask('gem/flaky')
    await ok(retried)
    expect(retried.headers.get('x-svc-attempts')).toBe('2')
    flaky.failNext(2, 503, 'UNAVAILABLE', 'The model is overloaded.')
    const exhausted = await ask('gem/flaky')
    expect(exhausted.status).toBe(503)
  })

  test('a fallback from gemini to anthropic mid-conversation, with tool calls in the history; then the circuit is open', async () => {
    const tools = [WEATHER]
    const first = await ok(
      await post('/v1/chat/completions', { model: 'gem/fallback', messages: [{ role: 'user', content: 'Weather?' }], tools, reasoning_effort: 'low' }),
    )
    expect(first.choices[0].message.thinking_blocks[0].signature).toStartWith('cg1.gemini.')
    const call = first.choices[0].message.tool_calls[0]
    flaky.failNext(10, 503, 'UNAVAILABLE', 'The model is overloaded.')
    const messages = [{ role: 'user', content: 'Weather?' }, first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'sunny' }]
    const second = await post('/v1/chat/completions', { model: 'gem/fallback', messages, tools })
    const answer = await ok(second)
    expect(second.headers.get('x-svc-upstream')).toBe('claude')
    expect(answer.choices[0].message.content).toContain('the tool said: sunny')
    const sent = claude.messageCalls().at(-1)!.body
    // The history as Anthropic takes it: the call and its result, no Gemini signature.
    expect(sent.messages[1]).toEqual({ role: 'assistant', content: [{ type: 'tool_use', id: call.id, name: 'get_weather', input: { city: 'Paris' } }] })
    expect(sent.messages[2].content[0]).toMatchObject({ type: 'tool_result', tool_use_id: call.id })
    // Two failures opened the circuit: the next request goes straight to Anthropic.
    const before = flaky.generateCalls().length
    const third = await post('/v1/chat/completions', { model: 'gem/fallback', messages: [{ role: 'user', content: 'again' }] })
    await ok(third)
    expect({ upstream: third.headers.get('x-svc-upstream'), calls: flaky.generateCalls().length }).toEqual({ upstream: 'claude', calls: before })
  })

  test('request limits and budgets hold on a gemini target', async () => {
    const tight = (await createKey(gateway.url, { name: 'tight', tier: 'tight' })).key
    const statuses = [(await ask('gem/flash', tight)).status, (await ask('gem/flash', tight)).status, (await ask('gem/flash', tight)).status]
    expect(statuses).toEqual([200, 200, 429])
    const budgeted = (await createKey(gateway.url, { name: 'budgeted', tier: 'budget' })).key
    await ok(await ask('gem/flash', budgeted))
    const refused = await ask('gem/flash', budgeted)
    expect({ status: refused.status, code: ((await refused.json()) as Json).error.code }).toEqual({ status: 429, code: 'budget_exceeded' })
  })
})
