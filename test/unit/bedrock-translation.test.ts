/**
 * The Bedrock dialect (src/wire/bedrock/), row by row: pivot requests as Converse requests, Converse
 * answers and ConverseStream events as the pivot, stop reasons and usage. Shapes from
 * https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html and
 * https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { toChatCompletion } from '../../src/wire/bedrock/answer-to-chat'
import { bedrockCannotServe, droppedForBedrock } from '../../src/wire/bedrock/cannot-serve'
import { ChunksFromConverse } from '../../src/wire/bedrock/chunks-from-events'
import { finishReason, toUsage } from '../../src/wire/bedrock/common'
import { toConverseRequest, toCountTokensRequest } from '../../src/wire/bedrock/request-from-chat'
import type { ConverseResponse, StreamEvent } from '../../src/wire/bedrock/types'
import type { ChatCompletionChunk, ChatMessage, ChatRequest } from '../../src/wire/pivot/types'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

const CLAUDE = 'us.anthropic.claude-sonnet-4-20250514-v1:0'
const LLAMA = 'meta.llama3-1-70b-instruct-v1:0'
const req = (messages: ChatMessage[], extra: Partial<ChatRequest> = {}, model = CLAUDE): ChatRequest => ({ model, messages, ...extra })
const PNG = 'iVBORw0KGgo='
const PDF = 'JVBERi0xLjQK'
const WEATHER = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
}

describe('requests, pivot → Converse', () => {
  test('system and developer messages, text, images and documents as bytes, cache points', () => {
    const body = toConverseRequest(
      req([
        { role: 'system', content: 'Be terse.' },
        { role: 'developer', content: [{ type: 'text', text: 'Metric units.', cache_control: { type: 'ephemeral' } }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look:' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
            { type: 'file', file: { file_data: `data:application/pdf;base64,${PDF}`, filename: 'Q3 report (final).pdf' } },
            { type: 'file', file: { file_data: `data:text/csv;base64,YSxiCg==`, filename: 'Q3 report (final).csv' } },
          ],
        },
      ]),
      CLAUDE,
    )
    expect(body.system).toEqual([{ text: 'Be terse.' }, { text: 'Metric units.' }, { cachePoint: { type: 'default' } }])
    expect(body.messages).toEqual([
      {
        role: 'user',
        content: [
          { text: 'Look:' },
          { image: { format: 'png', source: { bytes: PNG } } },
          { document: { format: 'pdf', name: 'Q3 report (final)', source: { bytes: PDF } } },
          { document: { format: 'csv', name: 'Q3 report (final)-2', source: { bytes: 'YSxiCg==' } } },
        ],
      },
    ])
    expect(body.inferenceConfig).toBeUndefined()
  })

  test('inferenceConfig: max tokens, temperature capped at 1, top_p, stop sequences', () => {
    const body = toConverseRequest(req([{ role: 'user', content: 'hi' }], { max_completion_tokens: 300, temperature: 1.7, top_p: 0.9, stop: ['END'] }), LLAMA)
    expect(body.inferenceConfig).toEqual({ maxTokens: 300, temperature: 1, topP: 0.9, stopSequences: ['END'] })
  })

  test('tools and each tool choice; none leaves tools out unless the history used them', () => {
    const messages: ChatMessage[] = [{ role: 'user', content: 'Weather?' }]
    const config = (choice: ChatRequest['tool_choice']) => toConverseRequest(req(messages, { tools: [WEATHER], tool_choice: choice }), CLAUDE).toolConfig
    const tools = [{ toolSpec: { name: 'get_weather', description: 'Weather', inputSchema: { json: WEATHER.function.parameters } } }]
    expect(config('auto')).toEqual({ tools, toolChoice: { auto: {} } })
    expect(config('required')).toEqual({ tools, toolChoice: { any: {} } })
    expect(config({ type: 'function', function: { name: 'get_weather' } })).toEqual({ tools, toolChoice: { tool: { name: 'get_weather' } } })
    expect(config('none')).toBeUndefined()
    const history: ChatMessage[] = [
      ...messages,
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'cold' },
    ]
    expect(toConverseRequest(req(history, { tools: [WEATHER], tool_choice: 'none' }), CLAUDE).toolConfig).toEqual({ tools })
  })

  test('parallel tool calls and their results: ids kept, results first in one user turn, neighbours merged', () => {
    const body = toConverseRequest(
      req([
        { role: 'user', content: 'Both cities' },
        {
          role: 'assistant',
          content: 'Checking.',
          tool_calls: [
            { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
            { id: 'call.b', type: 'function', function: { name: 'get_weather', arguments: '' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_a', content: 'cold' },
        { role: 'tool', tool_call_id: 'call.b', content: [{ type: 'text', text: 'warm' }] },
        { role: 'user', content: 'Thanks' },
      ]),
      CLAUDE,
    )
    expect(body.messages).toEqual([
      { role: 'user', content: [{ text: 'Both cities' }] },
      {
        role: 'assistant',
        content: [
          { text: 'Checking.' },
          { toolUse: { toolUseId: 'call_a', name: 'get_weather', input: { city: 'Oslo' } } },
          { toolUse: { toolUseId: 'call_b', name: 'get_weather', input: {} } },
        ],
      },
      {
        role: 'user',
        content: [
          { toolResult: { toolUseId: 'call_a', content: [{ text: 'cold' }] } },
          { toolResult: { toolUseId: 'call_b', content: [{ text: 'warm' }] } },
          { text: 'Thanks' },
        ],
      },
    ])
  })

  test("reasoning_effort is Claude's thinking through additionalModelRequestFields, with room for the budget and no sampling", () => {
    const body = toConverseRequest(req([{ role: 'user', content: 'think' }], { reasoning_effort: 'medium', temperature: 0.2, max_tokens: 1000 }), CLAUDE)
    expect(body.additionalModelRequestFields).toEqual({ thinking: { type: 'enabled', budget_tokens: 4096 } })
    expect(body.inferenceConfig).toEqual({ maxTokens: 5120 })
    const llama = toConverseRequest(req([{ role: 'user', content: 'think' }], { reasoning_effort: 'medium' }, LLAMA), LLAMA)
    expect(llama.additionalModelRequestFields).toBeUndefined()
    expect(droppedForBedrock(req([], { reasoning_effort: 'high', user: 'u1', parallel_tool_calls: false }, LLAMA))).toEqual([
      'user',
      'reasoning_effort',
      'parallel_tool_calls',
    ])
  })

  test('signed reasoning goes back first, unchanged; the gateway-signed and unsigned kinds do not, nor to other models', () => {
    const assistant: ChatMessage = {
      role: 'assistant',
      content: null,
      reasoning_content: 'plan',
      thinking_blocks: [
        { type: 'thinking', thinking: 'plan', signature: 'sig-bedrock-1' },
        { type: 'redacted_thinking', data: 'ZW5jcnlwdGVk' },
        { type: 'thinking', thinking: 'from elsewhere', signature: 'cg1.gateway' },
      ],
      tool_calls: [{ id: 'tooluse_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
    }
    const messages: ChatMessage[] = [{ role: 'user', content: 'go' }, assistant, { role: 'tool', tool_call_id: 'tooluse_1', content: 'ok' }]
    expect(toConverseRequest(req(messages, { tools: [WEATHER] }), CLAUDE).messages[1]!.content).toEqual([
      { reasoningContent: { reasoningText: { text: 'plan', signature: 'sig-bedrock-1' } } },
      { reasoningContent: { redactedContent: 'ZW5jcnlwdGVk' } },
      { toolUse: { toolUseId: 'tooluse_1', name: 'get_weather', input: {} } },
    ])
    expect(toConverseRequest(req(messages, { tools: [WEATHER] }, LLAMA), LLAMA).messages[1]!.content).toEqual([
      { toolUse: { toolUseId: 'tooluse_1', name: 'get_weather', input: {} } },
    ])
  })

  test('structured output as outputConfig.textFormat (the schema as JSON text); json_object as an object schema', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }
    const format = (response_format: ChatRequest['response_format']) =>
      toConverseRequest(req([{ role: 'user', content: 'x' }], { response_format }), CLAUDE).outputConfig
    expect(format({ type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } })).toEqual({
      textFormat: { type: 'json_schema', structure: { jsonSchema: { schema: JSON.stringify(schema), name: 'answer' } } },
    })
    expect(format({ type: 'json_object' })!.textFormat.structure.jsonSchema.schema).toBe('{"type":"object"}')
    expect(format({ type: 'text' })).toBeUndefined()
  })

  test('count-tokens body: what the Converse request would send', () => {
    const converse = toConverseRequest(
      req(
        [
          { role: 'system', content: 's' },
          { role: 'user', content: 'u' },
        ],
        { max_tokens: 5 },
      ),
      CLAUDE,
    )
    expect(toCountTokensRequest(converse)).toEqual({ input: { converse: { messages: [{ role: 'user', content: [{ text: 'u' }] }], system: [{ text: 's' }] } } })
  })

  test('what Bedrock cannot take is named; dropped hints too', () => {
    const user = (content: ChatMessage['content']) => req([{ role: 'user', content }])
    expect(bedrockCannotServe(user([{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }]))?.param).toBe('messages.0.content.0.image_url.url')
    expect(bedrockCannotServe(user([{ type: 'file', file: { file_id: 'file-1' } }]))?.code).toBe('unsupported_content')
    expect(bedrockCannotServe(user([{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }]))?.code).toBe('unsupported_content')
    expect(bedrockCannotServe(req([{ role: 'user', content: 'x' }], { n: 2 }))?.param).toBe('n')
    expect(bedrockCannotServe(req([{ role: 'user', content: 'x' }], { n: 1, seed: 4, logprobs: false }))).toBeNull()
    expect(bedrockCannotServe(req([{ role: 'user', content: 'x' }], { web_search_options: {} }))?.param).toBe('web_search_options')
    expect(bedrockCannotServe(req([{ role: 'user', content: 'x' }], { reasoning_effort: 'turbo' }))?.param).toBe('reasoning_effort')
    expect(droppedForBedrock(req([], { seed: 1, store: true }))).toEqual(['seed', 'store'])
  })
})

describe('answers and streams, Converse → pivot', () => {
  const answer: ConverseResponse = {
    output: {
      message: {
        role: 'assistant',
        content: [
          { reasoningContent: { reasoningText: { text: 'Two cities.', signature: 'sig-1' } } },
          { text: 'Checking both.' },
          { toolUse: { toolUseId: 'tooluse_a', name: 'get_weather', input: { city: 'Oslo' } } },
          { toolUse: { toolUseId: 'tooluse_b', name: 'get_weather', input: { city: 'Rome' } } },
        ],
      },
    },
    stopReason: 'tool_use',
    usage: { inputTokens: 100, outputTokens: 40, totalTokens: 390, cacheReadInputTokens: 200, cacheWriteInputTokens: 50 },
  }

  test('an answer: text, parallel tool calls with their ids, signed reasoning, exact usage', () => {
    const completion = toChatCompletion(answer, 'chatcmpl-1', 'alias', 1_700_000_000)
    expect(completion.choices[0]).toEqual({
      index: 0,
      logprobs: null,
      finish_reason: 'tool_calls',
      message: {
        role: 'assistant',
        content: 'Checking both.',
        refusal: null,
        reasoning_content: 'Two cities.',
        thinking_blocks: [{ type: 'thinking', thinking: 'Two cities.', signature: 'sig-1' }],
        tool_calls: [
          { id: 'tooluse_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
          { id: 'tooluse_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
        ],
      },
    })
    expect(completion.usage).toEqual({
      prompt_tokens: 350,
      completion_tokens: 40,
      total_tokens: 390,
      prompt_tokens_details: { cached_tokens: 200 },
      cache_creation_input_tokens: 50,
    })
  })

  test('every stop reason mapped', () => {
    const table = [
      'end_turn',
      'tool_use',
      'max_tokens',
      'stop_sequence',
      'guardrail_intervened',
      'content_filtered',
      'model_context_window_exceeded',
      'malformed_model_output',
    ].map((r) => [r, finishReason(r)])
    expect(table).toEqual([
      ['end_turn', 'stop'],
      ['tool_use', 'tool_calls'],
      ['max_tokens', 'length'],
      ['stop_sequence', 'stop'],
      ['guardrail_intervened', 'content_filter'],
      ['content_filtered', 'content_filter'],
      ['model_context_window_exceeded', 'length'],
      ['malformed_model_output', 'stop'],
    ])
    expect(toUsage({ inputTokens: 7, outputTokens: 3 })).toEqual({
      prompt_tokens: 7,
      completion_tokens: 3,
      total_tokens: 10,
      prompt_tokens_details: { cached_tokens: 0 },
    })
  })

  test('a stream: reasoning with its signature once, parallel calls kept apart, finish then usage', () => {
    const events: StreamEvent[] = [
      { type: 'messageStart', body: { role: 'assistant' } },
      { type: 'contentBlockDelta', body: { contentBlockIndex: 0, delta: { reasoningContent: { text: 'Two ' } } } },
      { type: 'contentBlockDelta', body: { contentBlockIndex: 0, delta: { reasoningContent: { text: 'cities.' } } } },
      { type: 'contentBlockDelta', body: { contentBlockIndex: 0, delta: { reasoningContent: { signature: 'sig-1' } } } },
      { type: 'contentBlockStop', body: { contentBlockIndex: 0 } },
      { type: 'contentBlockDelta', body: { contentBlockIndex: 1, delta: { text: 'Checking.' } } },
      { type: 'contentBlockStop', body: { contentBlockIndex: 1 } },
      { type: 'contentBlockStart', body: { contentBlockIndex: 2, start: { toolUse: { toolUseId: 'tooluse_a', name: 'get_weather' } } } },
      { type: 'contentBlockDelta', body: { contentBlockIndex: 2, delta: { toolUse: { input: '{"city":' } } } },
      { type: 'contentBlockStart', body: { contentBlockIndex: 3, start: { toolUse: { toolUseId: 'tooluse_b', name: 'get_weather' } } } },
      { type: 'contentBlockDelta', body: { contentBlockIndex: 2, delta: { toolUse: { input: '"Oslo"}' } } } },
      { type: 'contentBlockDelta', body: { contentBlockIndex: 3, delta: { toolUse: { input: '{"city":"Rome"}' } } } },
      { type: 'messageStop', body: { stopReason: 'tool_use' } },
      { type: 'metadata', body: { usage: { inputTokens: 10, outputTokens: 5, cacheReadInputTokens: 4 } } },
    ]
    const translator = new ChunksFromConverse('chatcmpl-x', 'alias', 1)
    const chunks: ChatCompletionChunk[] = events.flatMap((e) => translator.push(e))
    const deltas = chunks.map((c) => c.choices[0]?.delta)
    expect(deltas.filter((d) => d?.reasoning_content).map((d) => d!.reasoning_content)).toEqual(['Two ', 'cities.'])
    expect(deltas.flatMap((d) => d?.thinking_blocks ?? [])).toEqual([{ type: 'thinking', thinking: 'Two cities.', signature: 'sig-1' }])
    const calls = deltas.flatMap((d) => d?.tool_calls ?? [])
    expect(
      calls
        .filter((c) => c.index === 0)
        .map((c) => c.function?.arguments)
        .join(''),
    ).toBe('{"city":"Oslo"}')
    expect(
      calls
        .filter((c) => c.index === 1)
        .map((c) => c.function?.arguments)
        .join(''),
    ).toBe('{"city":"Rome"}')
    expect(calls.filter((c) => c.id).map((c) => c.id)).toEqual(['tooluse_a', 'tooluse_b'])
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('tool_calls')
    expect(chunks.at(-1)!.usage).toEqual({ prompt_tokens: 14, completion_tokens: 5, total_tokens: 19, prompt_tokens_details: { cached_tokens: 4 } })
    expect(translator.ended).toBe(true)
  })

  test('redacted reasoning comes once as a redacted thinking block; reasoning without a signature as text only', () => {
    const translator = new ChunksFromConverse('c', 'm', 1)
    const chunks = [
      ...translator.push({ type: 'contentBlockDelta', body: { contentBlockIndex: 0, delta: { reasoningContent: { redactedContent: 'c2VjcmV0' } } } }),
      ...translator.push({ type: 'contentBlockStop', body: { contentBlockIndex: 0 } }),
      ...translator.push({ type: 'contentBlockDelta', body: { contentBlockIndex: 1, delta: { reasoningContent: { text: 'open' } } } }),
      ...translator.push({ type: 'contentBlockStop', body: { contentBlockIndex: 1 } }),
    ]
    expect(chunks.map((c) => c.choices[0]!.delta)).toEqual([
      { thinking_blocks: [{ type: 'redacted_thinking', data: 'c2VjcmV0' }] },
      { reasoning_content: 'open' },
    ])
  })
})
