/**
 * Pivot chunks as the Responses stream (src/wire/openai-responses/events-from-chunks.ts): the event
 * sequence, sequence numbers, argument deltas that reassemble exactly, reasoning, failure. Every event
 * is validated against its own schema in OpenAI's published OpenAPI document (ResponseStreamEvent's
 * members: ResponseCreatedEvent, ResponseTextDeltaEvent, ResponseFunctionCallArgumentsDeltaEvent...),
 * and every stream is read by the openai SDK's own helper, `client.responses.stream(...).finalResponse()`
 * (v7.57.0, lib/responses/ResponseStream.js and internal/responses/response-accumulator.js, which
 * refuse an event out of place), over SSE from a fetch that answers with it.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import OpenAIClient from 'openai'
import { type AnswerOptions, toResponse } from '../../src/wire/openai-responses/answer-from-chat'
import { EventsFromChunks, sseEvent } from '../../src/wire/openai-responses/events-from-chunks'
import type { ResponsesRequest, StreamEvent } from '../../src/wire/openai-responses/types'
import { reasoningSealer } from '../../src/wire/pivot/sealed-reasoning'
import type { ChatCompletionChunk, ChunkDelta, Usage } from '../../src/wire/pivot/types'
import { TEST_MS } from '../support/hooks'
import { streamEventErrors } from '../support/openapi'

setDefaultTimeout(TEST_MS)

const sealer = reasoningSealer('test secret')
const OPTIONS: AnswerOptions = { id: 'resp_s1', createdAt: 1_760_000_000, seal: sealer.seal, origin: 'anthropic', includeEncrypted: false }
const USAGE: Usage = { prompt_tokens: 50, completion_tokens: 12, total_tokens: 62, prompt_tokens_details: { cached_tokens: 40 } }

const chunk = (delta: ChunkDelta, finish: string | null = null): ChatCompletionChunk => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'upstream',
  choices: [{ index: 0, delta, finish_reason: finish }],
})
const usageChunk = (usage: Usage = USAGE): ChatCompletionChunk => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'upstream',
  choices: [],
  usage,
})

/** The whole stream, every event checked against the document and numbered from 0 without a gap. */
function stream(chunks: ChatCompletionChunk[], request: Partial<ResponsesRequest> = {}, options: Partial<AnswerOptions> = {}) {
  const translator = new EventsFromChunks({ model: 'openai/gpt-5.6', input: 'Hi', ...request }, { ...OPTIONS, ...options })
  const events = [...chunks.flatMap((c) => translator.push(c)), ...translator.end()]
  expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i))
  for (const event of events) expect({ type: event.type, errors: streamEventErrors(event) }).toEqual({ type: event.type, errors: null })
  return { events, translator }
}

const types = (events: StreamEvent[]) => events.map((e) => e.type)
const of = <T extends StreamEvent['type']>(events: StreamEvent[], type: T) => events.filter((e): e is StreamEvent & { type: T } => e.type === type)

/** What the openai SDK's stream helper makes of the events, sent as OpenAI sends them (SSE). */
async function sdkFinal(events: StreamEvent[], request: Record<string, unknown> = {}) {
  const body = events.map(sseEvent).join('')
  const fetch = async () => new Response(body, { headers: { 'content-type': 'text/event-stream' } })
  const client = new OpenAIClient({ apiKey: 'k', baseURL: 'http://gateway.invalid/v1', fetch: fetch as unknown as typeof globalThis.fetch })
  const seen: string[] = []
  const runner = client.responses.stream({ model: 'openai/gpt-5.6', input: 'Hi', ...request } as never)
  runner.on('event', (event: { type: string }) => seen.push(event.type))
  return { final: await runner.finalResponse(), seen }
}

describe('the event sequence', () => {
  test('text: created, in_progress, the message item with its part and deltas, completed with usage', async () => {
    const { events, translator } = stream([
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: 'Hel' }),
      chunk({ content: 'lo' }),
      chunk({}, 'stop'),
      usageChunk(),
    ])
    expect(types(events)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ])
    expect(of(events, 'response.created')[0]!.response).toMatchObject({ status: 'in_progress', output: [], model: 'openai/gpt-5.6' })
    expect(of(events, 'response.output_text.done')[0]).toMatchObject({ item_id: 'msg_s1', output_index: 0, content_index: 0, text: 'Hello', logprobs: [] })
    const completed = of(events, 'response.completed')[0]!.response
    expect(completed.usage).toEqual({
      input_tokens: 50,
      input_tokens_details: { cached_tokens: 40, cache_write_tokens: 0 },
      output_tokens: 12,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 62,
    })
    expect(translator.usage).toEqual(USAGE)
    // The stream's final Response is the JSON answer's for the same completion.
    const json = toResponse(
      {
        id: 'c',
        object: 'chat.completion',
        created: 1,
        model: 'u',
        choices: [{ index: 0, message: { role: 'assistant', content: 'Hello', refusal: null }, logprobs: null, finish_reason: 'stop' }],
        usage: USAGE,
      },
      { model: 'openai/gpt-5.6', input: 'Hi' },
      OPTIONS,
    )
    expect(completed).toEqual(json.response)
    const { final, seen } = await sdkFinal(events)
    expect(final.output_text).toBe('Hello')
    expect(final.status).toBe('completed')
    expect(seen).toEqual(types(events))
  })

  test('parallel calls, their fragments interleaved: one item each, apart by output_index; deltas reassemble exactly', async () => {
    const a = ['{"ci', 'ty":"Par', 'is"}']
    const b = ['{"city"', ':"Ro', 'me"}']
    const { events, translator } = stream([
      chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'weather', arguments: a[0] } }] }),
      chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'weather', arguments: b[0] } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: a[1] } }] }),
      chunk({ tool_calls: [{ index: 1, function: { arguments: b[1] } }] }),
      chunk({ tool_calls: [{ index: 1, function: { arguments: b[2] } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: a[2] } }] }),
      chunk({}, 'tool_calls'),
      usageChunk(),
    ])
    const added = of(events, 'response.output_item.added')
    expect(added.map((e) => [e.output_index, e.item])).toEqual([
      [0, { type: 'function_call', id: 'fc_s1_0', call_id: 'call_a', name: 'weather', arguments: '', status: 'in_progress' }],
      [1, { type: 'function_call', id: 'fc_s1_1', call_id: 'call_b', name: 'weather', arguments: '', status: 'in_progress' }],
    ])
    const deltas = of(events, 'response.function_call_arguments.delta')
    for (const [index, parts] of [a, b].entries()) {
      const mine = deltas.filter((d) => d.output_index === index)
      expect(mine.map((d) => d.delta)).toEqual(parts)
      const done = of(events, 'response.function_call_arguments.done').find((d) => d.output_index === index)!
      expect(done).toMatchObject({ name: 'weather', arguments: parts.join('') })
    }
    expect(translator.response!.output.map((item) => (item as { arguments: string }).arguments)).toEqual(['{"city":"Paris"}', '{"city":"Rome"}'])
    const { final } = await sdkFinal(events)
    expect(final.output).toMatchObject([
      { type: 'function_call', call_id: 'call_a', arguments: '{"city":"Paris"}' },
      { type: 'function_call', call_id: 'call_b', arguments: '{"city":"Rome"}' },
    ])
  })

  test('text then a call: the message closes when the call starts; custom and namespaced calls come back under the caller’s names', async () => {
    const request: Partial<ResponsesRequest> = {
      tools: [
        { type: 'custom', name: 'apply_patch' },
        { type: 'namespace', name: 'crm', description: 'CRM', tools: [{ type: 'function', name: 'lookup' }] },
      ],
    }
    const { events, translator } = stream(
      [
        chunk({ content: 'Patching.' }),
        chunk({ tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'apply_patch', arguments: '{"input":"*** Be' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: 'gin\\n"}' } }] }),
        chunk({ tool_calls: [{ index: 1, id: 'c2', type: 'function', function: { name: 'crm__lookup', arguments: '{}' } }] }),
        chunk({}, 'tool_calls'),
      ],
      request,
    )
    const done = of(events, 'response.output_item.done')
    expect(done.map((e) => e.item.type)).toEqual(['message', 'custom_tool_call', 'function_call'])
    expect(of(events, 'response.custom_tool_call_input.delta').map((e) => e.delta)).toEqual(['*** Begin\n'])
    expect(of(events, 'response.custom_tool_call_input.done')[0]).toMatchObject({ item_id: 'ctc_s1_0', output_index: 1, input: '*** Begin\n' })
    expect(translator.response!.output[2]).toMatchObject({ type: 'function_call', name: 'lookup', namespace: 'crm', call_id: 'c2' })
    expect(of(events, 'response.function_call_arguments.done')[0]!.name).toBe('lookup')
    const { final } = await sdkFinal(events)
    expect(final.output.map((item) => item.type)).toEqual(['message', 'custom_tool_call', 'function_call'])
    expect(final.output_text).toBe('Patching.')
  })

  test('an empty answer is one empty message; a refusal streams as a refusal part', () => {
    expect(types(stream([chunk({}, 'stop')]).events).slice(2)).toEqual([
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ])
    const { events } = stream([chunk({ refusal: 'I can' }), chunk({ refusal: 'not.' }), chunk({}, 'stop')])
    expect(of(events, 'response.refusal.done')[0]).toMatchObject({ refusal: 'I cannot.', content_index: 0 })
  })

  test('finish_reason length ends with response.incomplete (max_output_tokens), the message incomplete', async () => {
    const { events } = stream([chunk({ content: 'Cut' }), chunk({}, 'length')])
    const last = events.at(-1)!
    expect(last.type).toBe('response.incomplete')
    expect((last as { response: { incomplete_details: unknown } }).response.incomplete_details).toEqual({ reason: 'max_output_tokens' })
    expect(of(events, 'response.output_item.done')[0]!.item).toMatchObject({ status: 'incomplete' })
    expect((await sdkFinal(events)).final.status).toBe('incomplete')
  })
})

describe('reasoning', () => {
  const anthropicLike = [
    chunk({ reasoning_content: 'Think' }),
    chunk({ reasoning_content: 'ing.' }),
    chunk({ thinking_blocks: [{ type: 'thinking', thinking: 'Thinking.', signature: 'sig-9' }] }),
    chunk({ content: 'Answer.' }),
    chunk({}, 'stop'),
    usageChunk({ ...USAGE, completion_tokens_details: { reasoning_tokens: 5 } }),
  ]

  test('summaries asked for: a reasoning item with summary part and text deltas, before the message', async () => {
    const { events, translator } = stream(anthropicLike, { reasoning: { effort: 'low', summary: 'auto' } }, { includeEncrypted: true })
    expect(types(events).slice(2, 10)).toEqual([
      'response.output_item.added',
      'response.reasoning_summary_part.added',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.delta',
      'response.reasoning_summary_text.done',
      'response.reasoning_summary_part.done',
      'response.output_item.done',
      'response.output_item.added',
    ])
    const item = of(events, 'response.output_item.done')[0]!.item as { id: string; summary: unknown; encrypted_content: string }
    expect(item).toMatchObject({ id: 'rs_s1', summary: [{ type: 'summary_text', text: 'Thinking.' }] })
    // The signed thinking travels sealed: the next turn restores it for an Anthropic target.
    expect(sealer.unseal(item.encrypted_content)).toEqual({
      origin: 'anthropic',
      thinking_blocks: [{ type: 'thinking', thinking: 'Thinking.', signature: 'sig-9' }],
      reasoning_content: 'Thinking.',
    })
    expect(translator.response!.usage!.output_tokens_details.reasoning_tokens).toBe(5)
    const { final } = await sdkFinal(events)
    expect(final.output.map((o) => o.type)).toEqual(['reasoning', 'message'])
    expect(final.output_text).toBe('Answer.')
  })

  test('no summary asked for, no include: the reasoning item shows nothing, the kept history still has it sealed', () => {
    const { events, translator } = stream(anthropicLike)
    expect(types(events).filter((t) => t.includes('reasoning'))).toEqual([])
    expect(of(events, 'response.output_item.done')[0]!.item).toEqual({ type: 'reasoning', id: 'rs_s1', summary: [] })
    expect(sealer.unseal((translator.history[0] as { encrypted_content: string }).encrypted_content)?.thinking_blocks?.[0]).toMatchObject({
      signature: 'sig-9',
    })
  })
})

describe('failure', () => {
  test('a stream broken mid-way ends with response.failed (status failed, error set) and never a completed', async () => {
    const translator = new EventsFromChunks({ model: 'openai/gpt-5.6', input: 'Hi' }, OPTIONS)
    const events = [
      ...translator.push(chunk({ content: 'Half' })),
      ...translator.push(chunk({ tool_calls: [{ index: 0, id: 'c', type: 'function', function: { name: 'f', arguments: '{"a"' } }] })),
      ...translator.fail({ message: 'Upstream connection reset', type: 'upstream_error' }),
    ]
    expect(translator.end()).toEqual([])
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i))
    for (const event of events) expect(streamEventErrors(event)).toBeNull()
    expect(types(events)).not.toContain('response.completed')
    const failed = events.at(-1)!
    expect(failed.type).toBe('response.failed')
    expect((failed as { response: unknown }).response).toMatchObject({
      status: 'failed',
      error: { code: 'server_error', message: 'Upstream connection reset' },
      output: [
        { type: 'message', status: 'completed' },
        { type: 'function_call', status: 'incomplete', arguments: '{"a"' },
      ],
    })
    const { final } = await sdkFinal(events)
    expect(final.status).toBe('failed')
  })

  test('a failure before any chunk still opens the stream (created, in_progress, failed); rate limits say so', () => {
    const translator = new EventsFromChunks({ model: 'm' }, OPTIONS)
    const events = translator.fail({ message: 'Too many requests', type: 'rate_limit_error' })
    expect(types(events)).toEqual(['response.created', 'response.in_progress', 'response.failed'])
    for (const event of events) expect(streamEventErrors(event)).toBeNull()
    expect(translator.response!.error).toEqual({ code: 'rate_limit_exceeded', message: 'Too many requests' })
  })
})

describe('the checks themselves', () => {
  test('the document’s schemas reject a broken event, and the SDK an event out of place, so the checks above can fail', async () => {
    const { events } = stream([chunk({ content: 'Hi' }), chunk({}, 'stop')])
    const delta = of(events, 'response.output_text.delta')[0]!
    const { logprobs: _, ...withoutLogprobs } = delta
    expect(streamEventErrors(withoutLogprobs)).toContain('logprobs')
    expect(streamEventErrors({ ...delta, sequence_number: 'one' } as { type: string })).not.toBeNull()
    expect(streamEventErrors({ ...of(events, 'response.completed')[0]!, response: { id: 'x' } } as { type: string })).not.toBeNull()
    expect(streamEventErrors({ type: 'response.made_up' })).not.toBeNull()
    // A delta for an item never added: the SDK's accumulator refuses the stream.
    const misplaced = [events[0]!, events[1]!, { ...delta, output_index: 3 }, events.at(-1)!]
    await expect(sdkFinal(misplaced)).rejects.toThrow()
    // Without response.created first, nothing can be accumulated.
    await expect(sdkFinal(events.slice(1))).rejects.toThrow()
  })
})

describe('upstream quirks', () => {
  test('calls all numbered 0, told apart by their ids alone, are still separate items', () => {
    const { translator } = stream([
      chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'a', arguments: '{"x":1}' } }] }),
      chunk({ tool_calls: [{ index: 0, id: 'call_2', type: 'function', function: { name: 'b', arguments: '{}' } }] }),
      chunk({ tool_calls: [{ index: 0, id: 'call_2', function: { arguments: '' } }] }),
      chunk({}, 'tool_calls'),
    ])
    expect(translator.response!.output).toMatchObject([
      { type: 'function_call', call_id: 'call_1', name: 'a', arguments: '{"x":1}' },
      { type: 'function_call', call_id: 'call_2', name: 'b', arguments: '{}' },
    ])
  })

  test('a call without an id gets one made from the Response’s', () => {
    const { translator } = stream([chunk({ tool_calls: [{ index: 0, type: 'function', function: { name: 'a', arguments: '{}' } }] }), chunk({}, 'tool_calls')])
    expect(translator.response!.output[0]).toMatchObject({ call_id: 'call_s1_0', id: 'fc_s1_0' })
  })
})
