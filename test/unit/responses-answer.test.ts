/**
 * A pivot chat completion as a Response (src/wire/openai-responses/answer-from-chat.ts), sealed
 * reasoning (src/wire/pivot/sealed-reasoning.ts), and the round trip of a stateless tool loop. Every
 * Response is validated against OpenAI's published OpenAPI document (test/fixtures/openai/openapi,
 * components.schemas.Response, OutputItem, ResponseUsage), and read by the openai SDK itself
 * (v7.57.0: `responses.create`, `responses.parse` with `zodTextFormat`) through a fetch that answers
 * with it, so that what the gateway writes is what OpenAI's clients decode.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import OpenAIClient from 'openai'
import { zodTextFormat } from 'openai/helpers/zod'
import { z } from 'zod'
import { type AnswerOptions, toResponse } from '../../src/wire/openai-responses/answer-from-chat'
import { toChatRequest } from '../../src/wire/openai-responses/request-to-chat'
import type { InputItem, ResponsesRequest } from '../../src/wire/openai-responses/types'
import { reasoningSealer, SEALED_REASONING_PREFIX } from '../../src/wire/pivot/sealed-reasoning'
import type { AssistantMessage, ChatCompletion, ThinkingBlock, Usage } from '../../src/wire/pivot/types'
import { TEST_MS } from '../support/hooks'
import { openapiErrors } from '../support/openapi'

setDefaultTimeout(TEST_MS)

const sealer = reasoningSealer('test secret')
const options = (extra: Partial<AnswerOptions> = {}): AnswerOptions => ({
  id: 'resp_abc',
  createdAt: 1_760_000_000,
  seal: sealer.seal,
  origin: 'anthropic',
  includeEncrypted: false,
  ...extra,
})
const USAGE: Usage = { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 }

function completion(message: Partial<AssistantMessage>, finish = 'stop', usage: Usage = USAGE): ChatCompletion {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model: 'upstream-model',
    choices: [{ index: 0, message: { role: 'assistant', content: null, refusal: null, ...message }, logprobs: null, finish_reason: finish }],
    usage,
  }
}

/** The Response, checked against the document before anything else looks at it. */
function answer(message: Partial<AssistantMessage>, request: Partial<ResponsesRequest> = {}, extra: Partial<AnswerOptions> = {}, finish = 'stop') {
  const out = toResponse(completion(message, finish), { model: 'openai/gpt-5.6', input: 'Hi', ...request }, options(extra))
  expect(openapiErrors('Response', out.response)).toBeNull()
  return out
}

/** An openai SDK client whose every request is answered with `body`. */
const clientAnswering = (body: unknown) =>
  new OpenAIClient({ apiKey: 'k', baseURL: 'http://gateway.invalid/v1', fetch: (async () => Response.json(body)) as unknown as typeof fetch })

describe('the Response object', () => {
  test('text: a message item, every field the document requires, the alias as model, usage with every detail (0 when unknown)', () => {
    const { response } = answer({ content: 'Hello!' }, { instructions: 'Be kind.', metadata: { team: 'a' }, temperature: 0.5 })
    expect(response).toMatchObject({
      id: 'resp_abc',
      object: 'response',
      created_at: 1_760_000_000,
      status: 'completed',
      completed_at: 1_760_000_000,
      error: null,
      incomplete_details: null,
      instructions: 'Be kind.',
      model: 'openai/gpt-5.6',
      parallel_tool_calls: true,
      metadata: { team: 'a' },
      tool_choice: 'auto',
      tools: [],
      temperature: 0.5,
      top_p: null,
      output: [
        {
          type: 'message',
          id: 'msg_abc',
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'Hello!', annotations: [], logprobs: [] }],
        },
      ],
      usage: {
        input_tokens: 120,
        input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
        output_tokens: 30,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 150,
      },
    })
  })

  test('usage details: cached, cache-written (the Anthropic translation’s cache_creation_input_tokens) and reasoning tokens', () => {
    const usage: Usage = {
      prompt_tokens: 1000,
      completion_tokens: 200,
      total_tokens: 1200,
      prompt_tokens_details: { cached_tokens: 800 },
      completion_tokens_details: { reasoning_tokens: 150 },
      cache_creation_input_tokens: 100,
    }
    const { response } = toResponse(completion({ content: 'x' }, 'stop', usage), { model: 'm' }, options())
    expect(response.usage).toEqual({
      input_tokens: 1000,
      input_tokens_details: { cached_tokens: 800, cache_write_tokens: 100 },
      output_tokens: 200,
      output_tokens_details: { reasoning_tokens: 150 },
      total_tokens: 1200,
    })
  })

  test('parallel tool calls: one function_call item each (fc_…), call ids kept, arguments as sent', () => {
    const { response } = answer(
      {
        content: null,
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_b', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
        ],
      },
      { tools: [{ type: 'function', name: 'weather', parameters: { type: 'object' } }], tool_choice: 'required' },
      {},
      'tool_calls',
    )
    expect(response.output).toEqual([
      { type: 'function_call', id: 'fc_abc_0', call_id: 'call_a', name: 'weather', arguments: '{"city":"Paris"}', status: 'completed' },
      { type: 'function_call', id: 'fc_abc_1', call_id: 'call_b', name: 'weather', arguments: '{"city":"Rome"}', status: 'completed' },
    ])
    // Function tools are echoed with the two fields the document requires of them.
    expect(response.tools).toEqual([{ type: 'function', name: 'weather', parameters: { type: 'object' }, strict: null }])
    expect(response.tool_choice).toBe('required')
  })

  test('custom and namespaced tools come back under the caller’s names: custom_tool_call with its input, namespace restored', () => {
    const request: Partial<ResponsesRequest> = {
      tools: [
        { type: 'custom', name: 'apply_patch' },
        {
          type: 'namespace',
          name: 'crm',
          description: 'CRM',
          tools: [
            { type: 'function', name: 'lookup' },
            { type: 'custom', name: 'note' },
          ],
        },
      ],
    }
    const { response } = answer(
      {
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'apply_patch', arguments: '{"input":"*** Begin Patch\\n"}' } },
          { id: 'c2', type: 'function', function: { name: 'crm__lookup', arguments: '{"id":7}' } },
          { id: 'c3', type: 'function', function: { name: 'crm__note', arguments: 'not json' } },
        ],
      },
      request,
      {},
      'tool_calls',
    )
    expect(response.output).toEqual([
      { type: 'custom_tool_call', id: 'ctc_abc_0', call_id: 'c1', name: 'apply_patch', input: '*** Begin Patch\n' },
      { type: 'function_call', id: 'fc_abc_1', call_id: 'c2', name: 'lookup', namespace: 'crm', arguments: '{"id":7}', status: 'completed' },
      { type: 'custom_tool_call', id: 'ctc_abc_2', call_id: 'c3', name: 'note', namespace: 'crm', input: 'not json' },
    ])
  })

  test('finish_reason length → incomplete (max_output_tokens); content_filter → incomplete (content_filter)', () => {
    const cut = answer({ content: 'Partial' }, {}, {}, 'length').response
    expect([cut.status, cut.incomplete_details, cut.completed_at, (cut.output[0] as { status: string }).status]).toEqual([
      'incomplete',
      { reason: 'max_output_tokens' },
      null,
      'incomplete',
    ])
    expect(answer({ content: '' }, {}, {}, 'content_filter').response.incomplete_details).toEqual({ reason: 'content_filter' })
  })

  test('a refusal is a refusal part; an empty answer is still one message with empty text', () => {
    expect(answer({ refusal: 'I cannot help with that.' }).response.output).toEqual([
      { type: 'message', id: 'msg_abc', status: 'completed', role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot help with that.' }] },
    ])
    expect(answer({ content: '' }).response.output).toEqual([
      { type: 'message', id: 'msg_abc', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: '', annotations: [], logprobs: [] }] },
    ])
  })

  test('structured output: text.format is echoed and the JSON text is the message; the SDK’s parse reads it', async () => {
    const Weather = z.object({ city: z.string(), celsius: z.number() })
    const format = zodTextFormat(Weather, 'weather')
    const { response } = answer({ content: '{"city":"Paris","celsius":18}' }, { text: { format: { ...format } } })
    expect(response.text.format).toMatchObject({ type: 'json_schema', name: 'weather', strict: true })
    const parsed = await clientAnswering(response).responses.parse({ model: 'openai/gpt-5.6', input: 'Weather?', text: { format } })
    expect(parsed.output_parsed).toEqual({ city: 'Paris', celsius: 18 })
    expect(parsed.output_text).toBe('{"city":"Paris","celsius":18}')
  })

  test('the openai SDK decodes it: responses.create gives the output, output_text and usage', async () => {
    const { response } = answer({ content: 'Hello from the gateway.' })
    const got = await clientAnswering(response).responses.create({ model: 'openai/gpt-5.6', input: 'Hi' })
    expect(got.output_text).toBe('Hello from the gateway.')
    expect(got.usage?.input_tokens_details.cached_tokens).toBe(0)
    expect(got.id).toBe('resp_abc')
  })
})

describe('reasoning', () => {
  const blocks: ThinkingBlock[] = [
    { type: 'thinking', thinking: 'The user wants weather.', signature: 'EqQBCkYIBxgCKkA-sig' },
    { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va' },
  ]
  const thinkingAnswer = { content: 'Sunny.', reasoning_content: 'The user wants weather.', thinking_blocks: blocks }

  test('summaries asked for: the reasoning text is the summary; encrypted_content only when `include` asks, always in the kept history', () => {
    const { response, history } = answer(thinkingAnswer, { reasoning: { effort: 'low', summary: 'auto' } })
    expect(response.output[0]).toEqual({ type: 'reasoning', id: 'rs_abc', summary: [{ type: 'summary_text', text: 'The user wants weather.' }] })
    expect(response.reasoning).toEqual({ effort: 'low', summary: 'auto' })
    const kept = history[0] as { encrypted_content: string }
    expect(kept.encrypted_content.startsWith(SEALED_REASONING_PREFIX)).toBe(true)
    expect(sealer.unseal(kept.encrypted_content)).toEqual({ origin: 'anthropic', thinking_blocks: blocks, reasoning_content: 'The user wants weather.' })
  })

  test('no summary asked for: an empty summary; with include, the sealed reasoning; an OpenAI-compatible target’s reasoning_content alone', () => {
    const { response } = answer({ content: 'x', reasoning_content: 'Raw reasoning' }, {}, { includeEncrypted: true, origin: 'openai' })
    const item = response.output[0] as { summary: unknown[]; encrypted_content: string }
    expect(item.summary).toEqual([])
    expect(sealer.unseal(item.encrypted_content)).toEqual({ origin: 'openai', reasoning_content: 'Raw reasoning' })
  })

  test('sealing: a round trip opens; a tampered, truncated, foreign or other-key token is null', () => {
    const reasoning = { origin: 'anthropic', thinking_blocks: blocks }
    const token = sealer.seal(reasoning)
    expect(sealer.unseal(token)).toEqual(reasoning)
    expect(sealer.seal(reasoning)).not.toBe(token) // a fresh IV each time
    const body = Buffer.from(token.slice(SEALED_REASONING_PREFIX.length), 'base64url')
    body[20] = body[20]! ^ 1
    expect(sealer.unseal(SEALED_REASONING_PREFIX + body.toString('base64url'))).toBeNull()
    expect(sealer.unseal(token.slice(0, 30))).toBeNull()
    expect(sealer.unseal('gAAAAABoOpenAIsOwnEncryptedContent')).toBeNull()
    expect(reasoningSealer('another secret').unseal(token)).toBeNull()
  })

  test('a stateless tool loop (Codex, store:false): the output sent back as input restores the signed thinking, calls and names', () => {
    const request: ResponsesRequest = {
      model: 'anthropic/claude',
      input: [{ role: 'user', content: 'Patch and look up' }],
      tools: [
        { type: 'custom', name: 'apply_patch' },
        { type: 'namespace', name: 'crm', description: 'CRM', tools: [{ type: 'function', name: 'lookup' }] },
      ],
      reasoning: { effort: 'high', summary: 'auto' },
      include: ['reasoning.encrypted_content'],
      store: false,
    }
    const turn1 = toResponse(
      completion(
        {
          reasoning_content: 'Plan.',
          thinking_blocks: [{ type: 'thinking', thinking: 'Plan.', signature: 'sig-1' }],
          tool_calls: [
            { id: 'toolu_1', type: 'function', function: { name: 'apply_patch', arguments: '{"input":"diff"}' } },
            { id: 'toolu_2', type: 'function', function: { name: 'crm__lookup', arguments: '{"id":1}' } },
          ],
        },
        'tool_calls',
      ),
      request,
      options({ includeEncrypted: true }),
    ).response
    const next: InputItem[] = [
      ...(request.input as InputItem[]),
      ...(turn1.output as InputItem[]),
      { type: 'custom_tool_call_output', call_id: 'toolu_1', output: 'patched' },
      { type: 'function_call_output', call_id: 'toolu_2', output: '{"name":"Ada"}' },
    ]
    const { chat, dropped } = toChatRequest({ ...request, input: next }, 'claude-x', { maxEffort: 'high', unseal: sealer.unseal })
    expect(dropped).toEqual([])
    expect(chat.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        thinking_blocks: [{ type: 'thinking', thinking: 'Plan.', signature: 'sig-1' }],
        reasoning_content: 'Plan.',
        tool_calls: [
          { id: 'toolu_1', type: 'function', function: { name: 'apply_patch', arguments: '{"input":"diff"}' } },
          { id: 'toolu_2', type: 'function', function: { name: 'crm__lookup', arguments: '{"id":1}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'toolu_1', content: 'patched' },
      { role: 'tool', tool_call_id: 'toolu_2', content: '{"name":"Ada"}' },
    ])
  })
})

describe('the validator itself', () => {
  test('it rejects a broken Response, so the checks above can fail', () => {
    const { response } = toResponse(completion({ content: 'x' }), { model: 'm' }, options())
    expect(openapiErrors('Response', response)).toBeNull()
    const { tool_choice: _, ...withoutToolChoice } = response
    expect(openapiErrors('Response', withoutToolChoice)).toContain('tool_choice')
    const noLogprobs = { ...response, output: [{ ...response.output[0], content: [{ type: 'output_text', text: 'x', annotations: [] }] }] }
    expect(openapiErrors('Response', noLogprobs)).toContain('logprobs')
    const noCacheWrites = { ...response, usage: { ...response.usage, input_tokens_details: { cached_tokens: 0 } } }
    expect(openapiErrors('Response', noCacheWrites)).toContain('cache_write_tokens')
    expect(openapiErrors('Response', { ...response, status: 'done' })).not.toBeNull()
    expect(openapiErrors('Response', { ...response, output: [{ type: 'function_call', id: 'fc_1', name: 'f' }] })).not.toBeNull()
  })
})
