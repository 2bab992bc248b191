import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { GatewayError } from '../../src/errors'
import { statusOf } from '../../src/http/errors'
import { toMessageResponse } from '../../src/wire/anthropic/answer-from-chat'
import { toChatCompletion } from '../../src/wire/anthropic/answer-to-chat'
import { anthropicCannotServe, openaiCannotServe } from '../../src/wire/anthropic/cannot-serve'
import { ChunksFromAnthropic } from '../../src/wire/anthropic/chunks-from-events'
import { JSON_TOOL } from '../../src/wire/anthropic/common'
import { EventsFromChunks } from '../../src/wire/anthropic/events-from-chunks'
import { toMessagesRequest } from '../../src/wire/anthropic/request-from-chat'
import { fromMessagesRequest } from '../../src/wire/anthropic/request-to-chat'
import type { MessageResponse, MessagesRequest, StreamEvent } from '../../src/wire/anthropic/types'
import type { ChatCompletionChunk, ChatMessage, ChatRequest } from '../../src/wire/pivot/types'
import { fixture, schemaErrors, sseFixture } from '../support/fixtures'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

const req = (messages: ChatMessage[], extra: Partial<ChatRequest> = {}): ChatRequest => ({ model: 'a/b', messages, ...extra })
const body = (request: ChatRequest) => toMessagesRequest(request, 'claude-x').body

/** A docs example's message with the envelope the docs leave out (the real API always sends it). */
function message(path: string, extra: Partial<MessageResponse> = {}): MessageResponse {
  const { response } = fixture(path)
  return {
    id: 'msg_fixture',
    type: 'message',
    role: 'assistant',
    model: 'claude-x',
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 5 },
    ...response,
    ...extra,
  }
}

/** Every event of an SSE fixture through the translator; each chunk must validate against OpenAI's schema. */
function translateStream(path: string, json: { wrapped: boolean } | null = null): ChatCompletionChunk[] {
  const translator = new ChunksFromAnthropic({ json }, 'a/b', 1_700_000_000)
  const chunks = sseFixture(path).flatMap((event) => translator.push(JSON.parse(event.data) as StreamEvent))
  for (const chunk of chunks) expect(schemaErrors('CreateChatCompletionStreamResponse', chunk)).toBeNull()
  expect(translator.stopped).toBe(true)
  return chunks
}

const deltas = (chunks: ChatCompletionChunk[]) => chunks.flatMap((c) => c.choices.map((choice) => choice.delta))

describe('request: OpenAI -> Anthropic, row by row', () => {
  test('system and developer messages, strings or text parts, become system text blocks; text parts stay separate blocks', () => {
    const out = body(
      req([
        { role: 'system', content: 'Be brief.' },
        { role: 'developer', content: [{ type: 'text', text: 'Use English.' }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'First part.' },
            { type: 'text', text: 'Second part.' },
          ],
        },
      ]),
    )
    expect(out.system).toEqual([
      { type: 'text', text: 'Be brief.' },
      { type: 'text', text: 'Use English.' },
    ])
    expect(out.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'First part.' },
          { type: 'text', text: 'Second part.' },
        ],
      },
    ])
  })

  test('images (data URL and https), PDFs, cache_control on a part', () => {
    const { request } = fixture('openai/request-vision.json')
    const out = body(request as ChatRequest)
    const blocks = out.messages[0]!.content as Record<string, unknown>[]
    expect(blocks[0]).toMatchObject({ type: 'text' })
    expect(blocks[1]).toEqual({ type: 'image', source: { type: 'url', url: (request as any).messages[0].content[1].image_url.url } })
    const parts = body(
      req([
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'high' } },
            { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0xLjQ=', filename: 'report.pdf' } },
            { type: 'text', text: 'cached context', cache_control: { type: 'ephemeral' } },
          ],
        },
      ]),
    ).messages[0]!.content
    expect(parts).toEqual([
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0xLjQ=' }, title: 'report.pdf' },
      { type: 'text', text: 'cached context', cache_control: { type: 'ephemeral' } },
    ])
  })

  test('tools, tool_choice and parallel_tool_calls', () => {
    const { request } = fixture('openai/request-tools.json')
    const out = body(request as ChatRequest)
    const fn = (request as any).tools[0].function
    expect(out.tools).toEqual([{ name: fn.name, description: fn.description, input_schema: fn.parameters }])
    expect(out.tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true })
    const tools: ChatRequest['tools'] = [{ type: 'function', function: { name: 'f' } }]
    const choice = (tool_choice: ChatRequest['tool_choice']) => body(req([{ role: 'user', content: 'x' }], { tools, tool_choice })).tool_choice
    expect(body(req([{ role: 'user', content: 'x' }], { tools })).tools).toEqual([{ name: 'f', input_schema: { type: 'object' } }])
    expect(choice('auto')).toEqual({ type: 'auto' })
    expect(choice('none')).toEqual({ type: 'none' })
    expect(choice('required')).toEqual({ type: 'any' })
    expect(choice({ type: 'function', function: { name: 'f' } })).toEqual({ type: 'tool', name: 'f' })
    expect(body(req([{ role: 'user', content: 'x' }], { tools, tool_choice: 'required', parallel_tool_calls: false })).tool_choice).toEqual({
      type: 'any',
      disable_parallel_tool_use: true,
    })
  })

  test('tool-call history: tool_use blocks after the text, tool results in one user turn (results first), with the next user message', () => {
    const { request } = fixture('openai/request-tool-loop.json')
    const out = body(request as ChatRequest)
    const messages = (request as ChatRequest).messages
    const assistant = messages.find((m) => m.role === 'assistant' && m.tool_calls)!
    const turn = out.messages.find((m) => m.role === 'assistant')!
    const uses = (turn.content as { type: string }[]).filter((b) => b.type === 'tool_use')
    expect(uses).toEqual(
      assistant.tool_calls!.map((call) => ({ type: 'tool_use', id: call.id, name: call.function.name, input: JSON.parse(call.function.arguments) })),
    )
    // Text first, then the calls.
    expect((turn.content as { type: string }[]).findIndex((b) => b.type === 'tool_use')).toBeGreaterThanOrEqual(
      (turn.content as { type: string }[]).findLastIndex((b) => b.type === 'text'),
    )
    const results = out.messages[out.messages.indexOf(turn) + 1]!
    expect(results.role).toBe('user')
    const resultBlocks = (results.content as { type: string; tool_use_id?: string }[]).filter((b) => b.type === 'tool_result')
    expect(resultBlocks.map((b) => b.tool_use_id)).toEqual(messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id))
    // Roles alternate.
    for (let i = 1; i < out.messages.length; i++) expect(out.messages[i]!.role).not.toBe(out.messages[i - 1]!.role)

    const merged = body(
      req([
        { role: 'user', content: 'weather in two cities' },
        {
          role: 'assistant',
          content: 'Checking.',
          tool_calls: [
            { id: 'call_a', type: 'function', function: { name: 'w', arguments: '{"city":"Paris"}' } },
            { id: 'call.b', type: 'function', function: { name: 'w', arguments: '' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_a', content: '18C' },
        { role: 'tool', tool_call_id: 'call.b', content: [{ type: 'text', text: '20C' }] },
        { role: 'user', content: 'and tomorrow?' },
      ]),
    ).messages
    expect(merged).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'weather in two cities' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', id: 'call_a', name: 'w', input: { city: 'Paris' } },
          // Anthropic ids are [A-Za-z0-9_-]: the same mapping on both sides of the turn.
          { type: 'tool_use', id: 'call_b', name: 'w', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_a', content: '18C' },
          { type: 'tool_result', tool_use_id: 'call_b', content: [{ type: 'text', text: '20C' }] },
          { type: 'text', text: 'and tomorrow?' },
        ],
      },
    ])
  })

  test('tool arguments in history that are not a JSON object: 400 naming them', () => {
    for (const args of ['{"city": ', '[1,2]', '42']) {
      try {
        body(req([{ role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: args } }] }]))
        throw new Error('expected a 400')
      } catch (error) {
        expect(error).toBeInstanceOf(GatewayError)
        expect(statusOf(error as GatewayError)).toBe(400)
        expect(error as GatewayError).toMatchObject({ type: 'invalid_request_error', param: 'messages.0.tool_calls.0.function.arguments' })
      }
    }
  })

  test('response_format: json_object and json_schema through the JSON tool, forced when nothing else competes', () => {
    const schema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }
    const out = body(req([{ role: 'user', content: 'x' }], { response_format: { type: 'json_schema', json_schema: { name: 'person', schema } } }))
    expect(out.tools).toEqual([expect.objectContaining({ name: JSON_TOOL, input_schema: schema })])
    expect(out.tool_choice).toEqual({ type: 'tool', name: JSON_TOOL })
    expect(body(req([{ role: 'user', content: 'x' }], { response_format: { type: 'json_object' } })).tools![0]!.input_schema).toEqual({ type: 'object' })
    // With the caller's own tools the choice stays theirs, and system asks for the JSON tool.
    const mixed = body(
      req([{ role: 'user', content: 'x' }], { tools: [{ type: 'function', function: { name: 'f' } }], response_format: { type: 'json_object' } }),
    )
    expect(mixed.tool_choice).toEqual({ type: 'auto' })
    expect(mixed.tools!.map((t) => t.name)).toEqual(['f', JSON_TOOL])
    expect(JSON.stringify(mixed.system)).toContain(JSON_TOOL)
    // A schema whose root is not an object is wrapped, and unwrapped on the way back.
    const list = toMessagesRequest(
      req([{ role: 'user', content: 'x' }], { response_format: { type: 'json_schema', json_schema: { name: 'l', schema: { type: 'array' } } } }),
      'm',
    )
    expect(list.body.tools![0]!.input_schema).toEqual({ type: 'object', properties: { value: { type: 'array' } }, required: ['value'] })
    expect(list.shape.json).toEqual({ wrapped: true })
  })

  test('reasoning_effort becomes thinking with a budget, max_tokens raised above it, no temperature or top_p', () => {
    const out = body(req([{ role: 'user', content: 'x' }], { reasoning_effort: 'medium', max_completion_tokens: 1000, temperature: 0.2, top_p: 0.5 }))
    expect(out.thinking).toEqual({ type: 'enabled', budget_tokens: 4096 })
    expect(out.max_tokens).toBe(4096 + 1024)
    expect(out.temperature).toBeUndefined()
    expect(out.top_p).toBeUndefined()
    expect(body(req([{ role: 'user', content: 'x' }], { reasoning_effort: 'high', max_completion_tokens: 30000 })).max_tokens).toBe(30000)
    expect(body(req([{ role: 'user', content: 'x' }], { reasoning_effort: 'low' })).max_tokens).toBe(1024 + 4096)
    expect(body(req([{ role: 'user', content: 'x' }], { reasoning_effort: 'minimal' })).thinking).toBeUndefined()
  })

  test('max tokens, temperature (capped at 1), top_p, stop, user; sampling hints dropped', () => {
    const out = body(
      req([{ role: 'user', content: 'x' }], {
        max_tokens: 100,
        max_completion_tokens: 50,
        temperature: 1.7,
        top_p: 0.9,
        stop: 'END',
        user: 'u-1',
        seed: 7,
        presence_penalty: 1,
        frequency_penalty: 1,
        logit_bias: { 1: 2 },
      }),
    )
    expect(out).toEqual({
      model: 'claude-x',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }],
      max_tokens: 50,
      temperature: 1,
      top_p: 0.9,
      stop_sequences: ['END'],
      metadata: { user_id: 'u-1' },
    })
    expect(body(req([{ role: 'user', content: 'x' }])).max_tokens).toBe(4096)
  })

  test('what Anthropic cannot serve is named: audio, n > 1, logprobs, file ids, unknown parts and fields', () => {
    const cases: [ChatRequest, string, string][] = [
      [req([{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }] }]), 'unsupported_content', 'messages.0.content.0'],
      [req([{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-1' } }] }]), 'unsupported_content', 'messages.0.content.0.file'],
      [
        req([{ role: 'user', content: [{ type: 'file', file: { file_data: 'data:text/csv;base64,YQ==' } }] }]),
        'unsupported_content',
        'messages.0.content.0.file',
      ],
      [
        req([{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/tiff;base64,AA==' } }] }]),
        'unsupported_content',
        'messages.0.content.0.image_url.url',
      ],
      [req([{ role: 'user', content: [{ type: 'video', video: {} }] }]), 'unsupported_content', 'messages.0.content.0.type'],
      [req([{ role: 'user', content: 'x' }], { n: 2 }), 'unsupported_parameter', 'n'],
      [req([{ role: 'user', content: 'x' }], { logprobs: true }), 'unsupported_parameter', 'logprobs'],
      [req([{ role: 'user', content: 'x' }], { modalities: ['text', 'audio'] }), 'unsupported_parameter', 'modalities'],
      [req([{ role: 'user', content: 'x' }], { audio: { voice: 'alloy', format: 'mp3' } }), 'unsupported_parameter', 'audio'],
      [req([{ role: 'user', content: 'x' }], { tools: [{ type: 'custom', custom: { name: 'g' } }] }), 'unsupported_parameter', 'tools.0.type'],
    ]
    for (const [request, code, param] of cases) expect(anthropicCannotServe(request)).toMatchObject({ code, param })
    const fine = req([{ role: 'user', content: 'x' }], {
      n: 1,
      logprobs: false,
      modalities: ['text'],
      seed: 1,
      store: true,
      metadata: { a: 'b' },
      temperature: null,
    })
    expect(anthropicCannotServe(fine)).toBeNull()
  })
})

describe('answer: Anthropic -> OpenAI', () => {
  test('text then a tool call (docs example): content, tool_calls, finish_reason tool_calls, schema-valid', () => {
    const completion = toChatCompletion(message('anthropic/message-tool-use.json'), { json: null }, 'a/b', 1)
    expect(schemaErrors('CreateChatCompletionResponse', completion)).toBeNull()
    const { message: answer, finish_reason, logprobs } = completion.choices[0]!
    expect(answer.content).toBe("I'll check the current weather in San Francisco for you.")
    expect(answer.refusal).toBeNull()
    expect(logprobs).toBeNull()
    expect(answer.tool_calls).toEqual([
      {
        id: 'toolu_01A09q90qw90lq917835lq9',
        type: 'function',
        function: { name: 'get_weather', arguments: '{"location":"San Francisco, CA","unit":"celsius"}' },
      },
    ])
    expect(finish_reason).toBe('tool_calls')
  })

  test('parallel tool use (docs example): every call, in order; no text means content null', () => {
    const source = message('anthropic/message-parallel-tool-use.json')
    const completion = toChatCompletion(source, { json: null }, 'a/b', 1)
    expect(schemaErrors('CreateChatCompletionResponse', completion)).toBeNull()
    const uses = source.content.filter((b) => b.type === 'tool_use')
    expect(completion.choices[0]!.message.tool_calls!.map((c) => [c.id, c.function.name, JSON.parse(c.function.arguments)])).toEqual(
      uses.map((u) => [(u as any).id, (u as any).name, (u as any).input]),
    )
    const noText = toChatCompletion({ ...source, content: uses }, { json: null }, 'a/b', 1)
    expect(noText.choices[0]!.message.content).toBeNull()
  })

  test('thinking (docs example): reasoning_content and signed thinking_blocks, sent back before the tool_use on the next turn', () => {
    const source = message('anthropic/message-thinking-tool-use.json', { stop_reason: 'tool_use' })
    const completion = toChatCompletion(source, { json: null }, 'a/b', 1)
    expect(schemaErrors('CreateChatCompletionResponse', completion)).toBeNull()
    const answer = completion.choices[0]!.message
    const thinking = source.content[0] as { thinking: string; signature: string }
    expect(answer.reasoning_content).toBe(thinking.thinking)
    expect(answer.thinking_blocks).toEqual([{ type: 'thinking', thinking: thinking.thinking, signature: thinking.signature }])

    // The next turn: the assistant message as the caller got it, then the tool's result.
    const next = body(
      req([
        { role: 'user', content: 'Weather in Paris?' },
        answer as unknown as ChatMessage,
        { role: 'tool', tool_call_id: answer.tool_calls![0]!.id, content: '18C' },
      ]),
    )
    expect(next.messages[1]).toEqual({ role: 'assistant', content: source.content })
    expect(next.messages[2]!.content).toEqual([{ type: 'tool_result', tool_use_id: answer.tool_calls![0]!.id, content: '18C' }])
  })

  test('usage with cache reads and writes; stop reasons', () => {
    const completion = toChatCompletion(
      message('anthropic/message-tool-use.json', {
        stop_reason: 'end_turn',
        usage: { input_tokens: 21, output_tokens: 4, cache_creation_input_tokens: 2, cache_read_input_tokens: 3 },
      }),
      { json: null },
      'a/b',
      1,
    )
    expect(completion.usage).toEqual({
      prompt_tokens: 26,
      completion_tokens: 4,
      total_tokens: 30,
      prompt_tokens_details: { cached_tokens: 3 },
      cache_creation_input_tokens: 2,
    })
    const finish = (stop_reason: string) =>
      toChatCompletion(message('anthropic/message-tool-use.json', { stop_reason, content: [{ type: 'text', text: 'x' }] }), { json: null }, 'a/b', 1)
        .choices[0]!.finish_reason
    expect(['end_turn', 'stop_sequence', 'max_tokens', 'refusal', 'pause_turn', 'tool_use'].map(finish)).toEqual([
      'stop',
      'stop',
      'length',
      'content_filter',
      'stop',
      'stop',
    ])
  })

  test('JSON mode: the JSON tool input is the content, never a tool call; wrapped schemas unwrap', () => {
    const answer = (input: Record<string, unknown>, wrapped = false) =>
      toChatCompletion(
        message('anthropic/message-tool-use.json', {
          stop_reason: 'tool_use',
          content: [
            { type: 'text', text: 'Here it is:' },
            { type: 'tool_use', id: 'toolu_1', name: JSON_TOOL, input },
          ],
        }),
        { json: { wrapped } },
        'a/b',
        1,
      )
    const object = answer({ name: 'Ann' })
    expect(schemaErrors('CreateChatCompletionResponse', object)).toBeNull()
    expect(object.choices[0]!.message).toEqual({ role: 'assistant', content: '{"name":"Ann"}', refusal: null })
    expect(object.choices[0]!.finish_reason).toBe('stop')
    expect(answer({ value: [1, 2] }, true).choices[0]!.message.content).toBe('[1,2]')
  })
})

describe('streams: Anthropic events -> OpenAI chunks', () => {
  test('text (docs transcript): content in order, finish_reason, a usage chunk', () => {
    const chunks = translateStream('anthropic/stream-text.sse')
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' })
    const text = deltas(chunks)
      .map((d) => d.content ?? '')
      .join('')
    const expected = sseFixture('anthropic/stream-text.sse')
      .map((e) => JSON.parse(e.data))
      .filter((e) => e.type === 'content_block_delta')
      .map((e) => e.delta.text)
      .join('')
    expect(text).toBe(expected)
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop')
    expect(chunks.at(-1)!.choices).toEqual([])
    expect(chunks.at(-1)!.usage!.completion_tokens).toBeGreaterThan(0)
  })

  test('a tool call (docs transcript): id and name first, then input_json_delta as argument fragments, finish_reason tool_calls', () => {
    const chunks = translateStream('anthropic/stream-tool-use.sse')
    const calls = deltas(chunks).flatMap((d) => d.tool_calls ?? [])
    expect(calls[0]).toMatchObject({ index: 0, type: 'function', function: { arguments: '' } })
    expect(calls[0]!.id).toStartWith('toolu_')
    expect(calls.every((c) => c.index === 0)).toBe(true)
    expect(JSON.parse(calls.map((c) => c.function?.arguments ?? '').join(''))).toBeObject()
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('tool_calls')
  })

  test('parallel tool calls: each keeps its own index, so they stay apart', () => {
    const chunks = translateStream('anthropic/stream-parallel-tool-use.sse')
    const calls = deltas(chunks).flatMap((d) => d.tool_calls ?? [])
    const byIndex = new Map<number, { id?: string; name?: string; args: string }>()
    for (const call of calls) {
      const entry = byIndex.get(call.index) ?? { args: '' }
      entry.id ??= call.id
      entry.name ??= call.function?.name
      entry.args += call.function?.arguments ?? ''
      byIndex.set(call.index, entry)
    }
    expect([...byIndex.keys()]).toEqual([0, 1])
    const starts = sseFixture('anthropic/stream-parallel-tool-use.sse')
      .map((e) => JSON.parse(e.data))
      .filter((e) => e.type === 'content_block_start' && e.content_block.type === 'tool_use')
    expect([...byIndex.values()].map((c) => [c.id, c.name])).toEqual(starts.map((s) => [s.content_block.id, s.content_block.name]))
    for (const call of byIndex.values()) expect(JSON.parse(call.args)).toBeObject()
  })

  test('thinking then a tool call: reasoning_content, one signed thinking_blocks entry, then the call', () => {
    const chunks = translateStream('anthropic/stream-thinking-tool-use.sse')
    const all = deltas(chunks)
    const events = sseFixture('anthropic/stream-thinking-tool-use.sse').map((e) => JSON.parse(e.data))
    const thinking = events.filter((e) => e.delta?.type === 'thinking_delta').map((e) => e.delta.thinking)
    const signature = events.filter((e) => e.delta?.type === 'signature_delta').map((e) => e.delta.signature)
    expect(all.map((d) => d.reasoning_content ?? '').join('')).toBe(thinking.join(''))
    expect(all.flatMap((d) => d.thinking_blocks ?? [])).toEqual([{ type: 'thinking', thinking: thinking.join(''), signature: signature.join('') }])
    expect(all.flatMap((d) => d.tool_calls ?? [])[0]).toMatchObject({ index: 0, id: 'toolu_01CswdEQBMshySk6Y9DFKrfq', function: { name: 'get_weather' } })
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('tool_calls')
  })

  test('JSON mode: the JSON tool streams as content, text before it is dropped, finish_reason stop', () => {
    const translator = new ChunksFromAnthropic({ json: { wrapped: false } }, 'a/b', 1)
    const events: StreamEvent[] = [
      { type: 'message_start', message: { ...message('anthropic/message-tool-use.json'), content: [] } },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Sure: ' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_j', name: JSON_TOOL, input: {} } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"name":' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '"Ann"}' } },
      { type: 'content_block_stop', index: 1 },
      { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 9 } },
      { type: 'message_stop' },
    ]
    const chunks = events.flatMap((e) => translator.push(e))
    for (const chunk of chunks) expect(schemaErrors('CreateChatCompletionStreamResponse', chunk)).toBeNull()
    const all = deltas(chunks)
    expect(all.map((d) => d.content ?? '').join('')).toBe('{"name":"Ann"}')
    expect(all.some((d) => d.tool_calls)).toBe(false)
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop')
  })
})

describe('request: Anthropic -> OpenAI (the Messages API over OpenAI-shaped targets), row by row', () => {
  const messagesRequest = (extra: Partial<MessagesRequest>): MessagesRequest => ({
    model: 'a/b',
    max_tokens: 300,
    messages: [{ role: 'user', content: 'hi' }],
    ...extra,
  })

  test('system (string or blocks), text, images, documents; cache_control not sent', () => {
    const out = fromMessagesRequest(
      messagesRequest({
        system: [
          { type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } },
          { type: 'text', text: 'Use English.' },
        ],
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Look:', cache_control: { type: 'ephemeral' } },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
              { type: 'image', source: { type: 'url', url: 'https://example.com/a.jpg' } },
              { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' }, title: 'a.pdf' },
              { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain words' } },
            ],
          },
        ],
      }),
      'gpt-x',
    )
    expect(out.messages).toEqual([
      {
        role: 'system',
        content: [
          { type: 'text', text: 'Be brief.' },
          { type: 'text', text: 'Use English.' },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Look:' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          { type: 'image_url', image_url: { url: 'https://example.com/a.jpg' } },
          { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' } },
          { type: 'text', text: 'plain words' },
        ],
      },
    ])
    expect(fromMessagesRequest(messagesRequest({ system: 'Be brief.' }), 'gpt-x').messages[0]).toEqual({ role: 'system', content: 'Be brief.' })
  })

  test('tool_use history becomes tool_calls; tool_result blocks become tool messages before the rest of their turn; thinking from earlier turns is not sent', () => {
    const out = fromMessagesRequest(
      messagesRequest({
        messages: [
          { role: 'user', content: 'weather?' },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'hm', signature: 'sig' },
              { type: 'text', text: 'Checking.' },
              { type: 'tool_use', id: 'toolu_1', name: 'w', input: { city: 'Paris' } },
              { type: 'tool_use', id: 'toolu_2', name: 'w', input: {} },
            ],
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'toolu_1', content: '18C' },
              { type: 'tool_result', tool_use_id: 'toolu_2', content: [{ type: 'text', text: 'down' }], is_error: true },
              { type: 'text', text: 'and tomorrow?' },
            ],
          },
        ],
      }),
      'gpt-x',
    )
    expect(out.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [
          { id: 'toolu_1', type: 'function', function: { name: 'w', arguments: '{"city":"Paris"}' } },
          { id: 'toolu_2', type: 'function', function: { name: 'w', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_1', content: '18C' },
      { role: 'tool', tool_call_id: 'toolu_2', content: 'Error: down' },
      { role: 'user', content: 'and tomorrow?' },
    ])
  })

  test('tools, tool_choice, disable_parallel_tool_use; thinking budget or output effort as reasoning_effort; the sampling fields', () => {
    const tool = { name: 'w', description: 'Weather', input_schema: { type: 'object', properties: {} } }
    const out = fromMessagesRequest(
      messagesRequest({
        tools: [tool],
        tool_choice: { type: 'any', disable_parallel_tool_use: true },
        thinking: { type: 'enabled', budget_tokens: 3000 },
        temperature: 0.3,
        top_p: 0.8,
        top_k: 5,
        stop_sequences: ['END'],
        metadata: { user_id: 'u-7' },
        stream: true,
      }),
      'gpt-x',
    )
    expect(out).toEqual({
      model: 'gpt-x',
      messages: [{ role: 'user', content: 'hi' }],
      max_completion_tokens: 300,
      temperature: 0.3,
      top_p: 0.8,
      stop: ['END'],
      user: 'u-7',
      tools: [{ type: 'function', function: { name: 'w', description: 'Weather', parameters: tool.input_schema } }],
      tool_choice: 'required',
      parallel_tool_calls: false,
      reasoning_effort: 'medium',
      stream: true,
    })
    const choice = (tool_choice: MessagesRequest['tool_choice']) => fromMessagesRequest(messagesRequest({ tools: [tool], tool_choice }), 'm').tool_choice
    expect([choice({ type: 'auto' }), choice({ type: 'none' }), choice({ type: 'tool', name: 'w' })]).toEqual([
      'auto',
      'none',
      { type: 'function', function: { name: 'w' } },
    ])
    expect(fromMessagesRequest(messagesRequest({ output_config: { effort: 'high' } }), 'm').reasoning_effort).toBe('high')
  })

  test('a round trip: the docs tool request, to OpenAI and back, keeps its messages, tools and choice', () => {
    const { request } = fixture('anthropic/messages-request-tools.json')
    const back = toMessagesRequest(fromMessagesRequest(request as MessagesRequest, 'x'), (request as MessagesRequest).model).body
    const normalize = (messages: MessagesRequest['messages']) =>
      messages.map((m) => ({ role: m.role, content: typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content }))
    expect(normalize(back.messages)).toEqual(normalize((request as MessagesRequest).messages))
    expect(back.tools).toEqual((request as MessagesRequest).tools)
    expect(back.max_tokens).toBe((request as MessagesRequest).max_tokens)
  })

  test('what OpenAI-shaped targets cannot serve is named: server tools, MCP servers, document URLs, images in tool results', () => {
    const cases: [Partial<MessagesRequest>, string, string][] = [
      [{ tools: [{ type: 'web_search_20250305', name: 'web_search' } as never] }, 'unsupported_parameter', 'tools.0.type'],
      [{ mcp_servers: [{ type: 'url', url: 'https://x' }] }, 'unsupported_parameter', 'mcp_servers'],
      [{ output_config: { format: { type: 'grammar', grammar: 'x' } } }, 'unsupported_parameter', 'output_config.format.type'],
      [
        { messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'url', url: 'https://x/a.pdf' } }] }] },
        'unsupported_content',
        'messages.0.content.0.source',
      ],
      [
        {
          messages: [
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'image', source: { type: 'url', url: 'https://x' } }] }] },
          ],
        },
        'unsupported_content',
        'messages.0.content.0.content.0',
      ],
      [{ messages: [{ role: 'user', content: [{ type: 'search_result', source: 'x' } as never] }] }, 'unsupported_content', 'messages.0.content.0.type'],
    ]
    for (const [extra, code, param] of cases) expect(openaiCannotServe(messagesRequest(extra))).toMatchObject({ code, param })
    expect(openaiCannotServe(messagesRequest({ top_k: 3, context_management: { edits: [] }, thinking: { type: 'enabled', budget_tokens: 2000 } }))).toBeNull()
  })
})

describe('answer: OpenAI -> Anthropic', () => {
  test('text, tool calls (arguments that are not a JSON object kept, not dropped), finish reasons, usage with cached tokens', () => {
    const { response } = fixture('openai/response-tool-calls.json')
    const message = toMessageResponse(response, 'a/b')
    const calls = response.choices[0].message.tool_calls as { id: string; function: { name: string; arguments: string } }[]
    expect(message).toMatchObject({ type: 'message', role: 'assistant', model: 'a/b', stop_reason: 'tool_use', stop_sequence: null })
    expect(message.content.filter((b) => b.type === 'tool_use')).toEqual(
      calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.function.name, input: JSON.parse(c.function.arguments) })),
    )
    const broken = {
      ...response,
      choices: [
        {
          ...response.choices[0],
          message: { ...response.choices[0].message, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{"a":' } }] },
        },
      ],
    }
    expect(toMessageResponse(broken, 'a/b').content).toContainEqual({ type: 'tool_use', id: 'c', name: 'f', input: { _raw_arguments: '{"a":' } })
    const usage = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120, prompt_tokens_details: { cached_tokens: 60 } }
    const text = (finish: string) =>
      toMessageResponse(
        { ...response, usage, choices: [{ index: 0, message: { role: 'assistant', content: 'x', refusal: null }, logprobs: null, finish_reason: finish }] },
        'a/b',
      )
    expect(['stop', 'length', 'tool_calls', 'content_filter'].map((f) => text(f).stop_reason)).toEqual(['end_turn', 'max_tokens', 'tool_use', 'refusal'])
    expect(text('stop').usage).toEqual({ input_tokens: 40, output_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 60 })
  })

  test('reasoning: thinking_blocks come back with their signatures; bare reasoning_content as a thinking block', () => {
    const base = { id: 'c', object: 'chat.completion' as const, created: 1, model: 'm', usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }
    const signed = toMessageResponse(
      {
        ...base,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: 'ok',
              refusal: null,
              reasoning_content: 'hm',
              thinking_blocks: [{ type: 'thinking', thinking: 'hm', signature: 's1' }],
            },
            logprobs: null,
            finish_reason: 'stop',
          },
        ],
      },
      'a/b',
    )
    expect(signed.content).toEqual([
      { type: 'thinking', thinking: 'hm', signature: 's1' },
      { type: 'text', text: 'ok' },
    ])
    const bare = toMessageResponse(
      {
        ...base,
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok', refusal: null, reasoning_content: 'r1' }, logprobs: null, finish_reason: 'stop' }],
      },
      'a/b',
    )
    expect(bare.content[0]).toEqual({ type: 'thinking', thinking: 'r1', signature: '' })
  })
})

describe('streams: OpenAI chunks -> Anthropic events', () => {
  const chunksOf = (path: string) =>
    sseFixture(path)
      .filter((e) => e.data !== '[DONE]')
      .map((e) => JSON.parse(e.data) as ChatCompletionChunk)

  test('parallel tool calls (fixture): one tool_use block each, in order, with its whole input; the documented sequence', () => {
    const translator = new EventsFromChunks('a/b')
    const events = [...chunksOf('openai/stream-tool-calls.sse').flatMap((c) => translator.push(c)), ...translator.end()]
    expect(events[0]).toMatchObject({ type: 'message_start', message: { model: 'a/b', role: 'assistant', content: [] } })
    const types = events.map((e) => e.type)
    expect(types.at(-2)).toBe('message_delta')
    expect(types.at(-1)).toBe('message_stop')
    const starts = events.filter((e): e is Extract<StreamEvent, { type: 'content_block_start' }> => e.type === 'content_block_start')
    expect(starts.map((e) => e.index)).toEqual(starts.map((_, i) => i))
    const expected = new Map<number, { id: string; args: string }>()
    for (const chunk of chunksOf('openai/stream-tool-calls.sse'))
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
        const entry = expected.get(call.index) ?? { id: '', args: '' }
        entry.id ||= call.id ?? ''
        entry.args += call.function?.arguments ?? ''
        expected.set(call.index, entry)
      }
    const tools = starts.filter((s) => s.content_block.type === 'tool_use')
    expect(tools.map((s) => (s.content_block as { id: string }).id)).toEqual([...expected.values()].map((c) => c.id))
    for (const start of tools) {
      const input = events
        .filter((e): e is Extract<StreamEvent, { type: 'content_block_delta' }> => e.type === 'content_block_delta' && e.index === start.index)
        .map((e) => (e.delta as { partial_json: string }).partial_json)
        .join('')
      const call = [...expected.values()].find((c) => c.id === (start.content_block as { id: string }).id)!
      expect(JSON.parse(input)).toEqual(JSON.parse(call.args))
    }
    expect(events.find((e) => e.type === 'message_delta')).toMatchObject({ delta: { stop_reason: 'tool_use' } })
  })

  test('fragments of parallel calls interleaved by the upstream still make whole, separate inputs', () => {
    const chunk = (delta: ChatCompletionChunk['choices'][number]['delta'], finish: string | null = null): ChatCompletionChunk => ({
      id: 'c',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'm',
      choices: [{ index: 0, delta, finish_reason: finish }],
    })
    const translator = new EventsFromChunks('a/b')
    const chunks = [
      chunk({ role: 'assistant', content: 'Both:' }),
      chunk({ tool_calls: [{ index: 0, id: 'a', type: 'function', function: { name: 'w', arguments: '{"c":' } }] }),
      chunk({ tool_calls: [{ index: 1, id: 'b', type: 'function', function: { name: 'w', arguments: '{"c":"B"}' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"A"}' } }] }),
      chunk({}, 'tool_calls'),
    ]
    const events = [...chunks.flatMap((c) => translator.push(c)), ...translator.end()]
    const inputs = events.flatMap((e) =>
      e.type === 'content_block_delta' && e.delta.type === 'input_json_delta' ? [JSON.parse((e.delta as { partial_json: string }).partial_json)] : [],
    )
    expect(inputs).toEqual([{ c: 'A' }, { c: 'B' }])
    expect(events.filter((e) => e.type === 'content_block_start').map((e) => (e as { index: number }).index)).toEqual([0, 1, 2])
  })

  test('reasoning then text: a thinking block (signature from thinking_blocks), then a text block', () => {
    const translator = new EventsFromChunks('a/b')
    const base = { id: 'c', object: 'chat.completion.chunk' as const, created: 1, model: 'm' }
    const events = [
      ...translator.push({ ...base, choices: [{ index: 0, delta: { reasoning_content: 'let me ' }, finish_reason: null }] }),
      ...translator.push({ ...base, choices: [{ index: 0, delta: { reasoning_content: 'think' }, finish_reason: null }] }),
      ...translator.push({
        ...base,
        choices: [{ index: 0, delta: { thinking_blocks: [{ type: 'thinking', thinking: 'let me think', signature: 'sig' }] }, finish_reason: null }],
      }),
      ...translator.push({ ...base, choices: [{ index: 0, delta: { content: 'Answer.' }, finish_reason: 'stop' }] }),
      ...translator.end(),
    ]
    expect(events.map((e) => (e.type === 'content_block_delta' ? `delta:${e.delta.type}` : e.type))).toEqual([
      'message_start',
      'content_block_start',
      'delta:thinking_delta',
      'delta:thinking_delta',
      'delta:signature_delta',
      'content_block_stop',
      'content_block_start',
      'delta:text_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ])
  })
})
