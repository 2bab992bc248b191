/**
 * The Gemini dialect's upstream direction (src/wire/gemini) and Google's error mapping
 * (src/providers/gemini/google.ts), row by row, against the shapes of Google's reference:
 * https://ai.google.dev/api/generate-content (requests, answers, stream events, usageMetadata,
 * FinishReason, PromptFeedback), https://ai.google.dev/gemini-api/docs/thought-signatures and
 * https://cloud.google.com/apis/design/errors (error bodies, RetryInfo).
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { googleHttpError, Unauthorized } from '../../src/providers/gemini/google'
import { toChatCompletion } from '../../src/wire/gemini/answer-to-chat'
import { droppedFromChat, geminiCannotServe } from '../../src/wire/gemini/cannot-serve'
import { ChunksFromGemini } from '../../src/wire/gemini/chunks-from-events'
import { toGenerateContentRequest } from '../../src/wire/gemini/request-from-chat'
import { signatureBlock, signatureOf } from '../../src/wire/gemini/signature'
import type { ChatRequest } from '../../src/wire/pivot/types'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

const chat = (extra: Partial<ChatRequest>): ChatRequest => ({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }], ...extra })

describe('request-from-chat', () => {
  test('parallel calls: signatures back on their anchors, results in call order by name; legacy functions too', () => {
    const body = toGenerateContentRequest(
      chat({
        messages: [
          { role: 'user', content: 'go' },
          {
            role: 'assistant',
            content: 'On it.',
            tool_calls: [
              { id: 'a', type: 'function', function: { name: 'one', arguments: '{"x":1}' } },
              { id: 'b', type: 'function', function: { name: 'two', arguments: '' } },
            ],
            thinking_blocks: [
              signatureBlock('SIG-CALL', { call: 0 }, 'thought'),
              signatureBlock('SIG-TEXT', 'text'),
              { type: 'thinking', thinking: 't', signature: 'anthropic-sig' },
            ],
          },
          { role: 'tool', tool_call_id: 'b', content: 'two done' },
          { role: 'tool', tool_call_id: 'a', content: [{ type: 'text', text: '{"ok":true}' }] },
          { role: 'user', content: 'and?' },
        ],
      }),
    )
    expect(body.contents).toEqual([
      { role: 'user', parts: [{ text: 'go' }] },
      {
        role: 'model',
        parts: [
          { text: 'On it.', thoughtSignature: 'SIG-TEXT' },
          { functionCall: { name: 'one', args: { x: 1 } }, thoughtSignature: 'SIG-CALL' },
          { functionCall: { name: 'two', args: {} } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'one', response: { ok: true } } },
          { functionResponse: { name: 'two', response: { output: 'two done' } } },
          { text: 'and?' },
        ],
      },
    ])
  })

  test("a text signature with no text goes on an empty text part; a result that answers no call is the caller's 400", () => {
    const body = toGenerateContentRequest(
      chat({
        messages: [
          { role: 'user', content: 'a' },
          { role: 'assistant', content: '', thinking_blocks: [signatureBlock('S', 'text')] },
          { role: 'user', content: 'b' },
        ],
      }),
    )
    expect(body.contents[1]).toEqual({ role: 'model', parts: [{ text: '', thoughtSignature: 'S' }] })
    expect(() =>
      toGenerateContentRequest(
        chat({
          messages: [
            { role: 'user', content: 'a' },
            { role: 'tool', tool_call_id: 'zz', content: 'x' },
          ],
        }),
      ),
    ).toThrow('messages.1.tool_call_id')
    expect(() =>
      toGenerateContentRequest(
        chat({ messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '[1]' } }] }] }),
      ),
    ).toThrow('messages.0.tool_calls.0.function.arguments must be a JSON object')
  })

  test("reasoning_effort as thinking budgets (Google's OpenAI mapping); audio inline; json_object", () => {
    const budgets = ['minimal', 'low', 'medium', 'high', 'xhigh'].map(
      (effort) => toGenerateContentRequest(chat({ reasoning_effort: effort })).generationConfig?.thinkingConfig,
    )
    expect(budgets.map((c) => c?.thinkingBudget)).toEqual([512, 1024, 8192, 24576, 32768])
    expect(budgets.every((c) => c?.includeThoughts === true)).toBe(true)
    const audio = toGenerateContentRequest(
      chat({
        messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'UklGR', format: 'wav' } }] }],
        response_format: { type: 'json_object' },
      }),
    )
    expect(audio.contents[0]!.parts).toEqual([{ inlineData: { mimeType: 'audio/wav', data: 'UklGR' } }])
    expect(audio.generationConfig).toEqual({ responseMimeType: 'application/json' })
  })
})

describe('cannot-serve', () => {
  test('what has no Gemini form is named; neutral values pass; dropped hints are listed', () => {
    const rows = [
      chat({ n: 2 }),
      chat({ n: 1, logprobs: false }),
      chat({ audio: { voice: 'x' } }),
      chat({ tools: [{ type: 'custom', name: 'x' }] }),
      chat({ reasoning_effort: 'extreme' }),
      chat({ stop: ['1', '2', '3', '4', '5', '6'] }),
      chat({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'ftp://x/y.png' } }] }] }),
      chat({ messages: [{ role: 'tool', tool_call_id: 'a', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }] }),
      chat({ response_format: { type: 'grammar' } as never }),
    ].map((request) => geminiCannotServe(request)?.param ?? null)
    expect(rows).toEqual([
      'n',
      null,
      'audio',
      'tools.0.type',
      'reasoning_effort',
      'stop',
      'messages.0.content.0.image_url.url',
      'messages.0.content.0.type',
      'response_format.type',
    ])
    expect(droppedFromChat(chat({ user: 'u', store: true, parallel_tool_calls: false }))).toEqual(['user', 'store', 'parallel_tool_calls'])
  })
})

describe('answer-to-chat', () => {
  const usageMetadata = {
    promptTokenCount: 100,
    candidatesTokenCount: 20,
    thoughtsTokenCount: 30,
    cachedContentTokenCount: 40,
    toolUsePromptTokenCount: 5,
    totalTokenCount: 155,
  }

  test('text, thoughts, calls with stable ids, signatures, exact usage', () => {
    const completion = toChatCompletion(
      {
        responseId: 'r1',
        candidates: [
          {
            content: {
              role: 'model',
              parts: [
                { text: 'Plan.', thought: true },
                { text: 'Calling.' },
                { functionCall: { name: 'f', args: { a: 1 } }, thoughtSignature: 'S0' },
                { functionCall: { name: 'g', args: {}, id: 'google-id' } },
              ],
            },
            finishReason: 'STOP',
          },
        ],
        usageMetadata,
      },
      'm',
      1,
    )
    expect(completion.choices[0]).toEqual({
      index: 0,
      logprobs: null,
      finish_reason: 'tool_calls',
      message: {
        role: 'assistant',
        content: 'Calling.',
        refusal: null,
        reasoning_content: 'Plan.',
        thinking_blocks: [{ type: 'thinking', thinking: 'Plan.', signature: 'cg1.gemini.c0.S0' }],
        tool_calls: [
          { id: 'call_r1_0', type: 'function', function: { name: 'f', arguments: '{"a":1}' } },
          { id: 'google-id', type: 'function', function: { name: 'g', arguments: '{}' } },
        ],
      },
    })
    expect(completion.usage).toEqual({
      prompt_tokens: 105,
      completion_tokens: 50,
      total_tokens: 155,
      prompt_tokens_details: { cached_tokens: 40 },
      completion_tokens_details: { reasoning_tokens: 30 },
    })
  })

  test('finish reasons: MAX_TOKENS length, SAFETY and the other filters content_filter, a blocked prompt content_filter', () => {
    const finish = (reason: string) =>
      toChatCompletion({ candidates: [{ content: { parts: [{ text: 'x' }] }, finishReason: reason }] }, 'm', 1).choices[0]!.finish_reason
    expect(['STOP', 'MAX_TOKENS', 'SAFETY', 'RECITATION', 'PROHIBITED_CONTENT', 'OTHER'].map(finish)).toEqual([
      'stop',
      'length',
      'content_filter',
      'content_filter',
      'content_filter',
      'stop',
    ])
    const blocked = toChatCompletion({ promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 } }, 'm', 1)
    expect({ finish: blocked.choices[0]!.finish_reason, content: blocked.choices[0]!.message.content, prompt: blocked.usage.prompt_tokens }).toEqual({
      finish: 'content_filter',
      content: '',
      prompt: 9,
    })
  })
})

describe('chunks-from-events', () => {
  test('thoughts, text, whole calls as they come; signatures before the finish; the usage last', () => {
    const stream = new ChunksFromGemini('m', 1)
    const deltas = [
      { responseId: 'r', candidates: [{ content: { parts: [{ text: 'Hm.', thought: true }] } }], usageMetadata: { promptTokenCount: 10 } },
      { responseId: 'r', candidates: [{ content: { parts: [{ text: 'Hel' }] } }] },
      { responseId: 'r', candidates: [{ content: { parts: [{ text: 'lo' }, { functionCall: { name: 'f', args: {} }, thoughtSignature: 'S' }] } }] },
      {
        responseId: 'r',
        candidates: [{ content: { parts: [{ text: '', thoughtSignature: 'T' }] }, finishReason: 'STOP' }],
        usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 4, thoughtsTokenCount: 2 },
      },
    ].flatMap((event) => stream.push(event).map((chunk) => [chunk.choices[0]!.delta, chunk.choices[0]!.finish_reason]))
    expect(stream.finished).toBe(true)
    expect(deltas).toEqual([
      [{ role: 'assistant', content: '' }, null],
      [{ reasoning_content: 'Hm.' }, null],
      [{ content: 'Hel' }, null],
      [{ content: 'lo' }, null],
      [{ tool_calls: [{ index: 0, id: 'call_r_0', type: 'function', function: { name: 'f', arguments: '{}' } }] }, null],
      [{ thinking_blocks: [signatureBlock('S', { call: 0 }), signatureBlock('T', 'text')] }, null],
      [{}, 'tool_calls'],
    ])
    expect(stream.end().usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 6, total_tokens: 16 })
  })

  test('a blocked prompt finishes with content_filter; a stream without a finish is not finished', () => {
    const blocked = new ChunksFromGemini('m', 1)
    expect(blocked.push({ promptFeedback: { blockReason: 'OTHER' } }).map((c) => c.choices[0]!.finish_reason)).toEqual([null, 'content_filter'])
    const cut = new ChunksFromGemini('m', 1)
    cut.push({ candidates: [{ content: { parts: [{ text: 'x' }] } }] })
    expect(cut.finished).toBe(false)
  })
})

describe('signatures and errors', () => {
  test('the signature codec reads what it wrote, and nothing else', () => {
    expect(signatureOf(signatureBlock('a+b/c==', { call: 12 }))).toEqual({ anchor: { call: 12 }, signature: 'a+b/c==' })
    expect(signatureOf(signatureBlock('xyz', 'text'))).toEqual({ anchor: 'text', signature: 'xyz' })
    expect([signatureOf({ type: 'thinking', thinking: '', signature: 'cg1.abc' }), signatureOf({ type: 'redacted_thinking', data: 'x' })]).toEqual([null, null])
  })

  test('Google errors: RESOURCE_EXHAUSTED 429 with RetryInfo, UNAVAILABLE 503, 401 refreshable, a bad key 502, INVALID_ARGUMENT relayed', () => {
    const body = (code: number, status: string, details: unknown[] = []) => JSON.stringify({ error: { code, message: `m ${status}`, status, details } })
    const limited = googleHttpError(
      'g',
      429,
      new Headers(),
      body(429, 'RESOURCE_EXHAUSTED', [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1.5s' }]),
    )
    expect({ type: limited.type, retryAfterMs: limited.retryAfterMs, seconds: limited.details.retryAfterSeconds }).toEqual({
      type: 'rate_limit_error',
      retryAfterMs: 1500,
      seconds: 2,
    })
    const unavailable = googleHttpError('g', 503, new Headers(), body(503, 'UNAVAILABLE'))
    expect({ type: unavailable.type, retry: unavailable.retry }).toEqual({ type: 'overloaded_error', retry: 'same' })
    expect(googleHttpError('g', 401, new Headers(), body(401, 'UNAUTHENTICATED'))).toBeInstanceOf(Unauthorized)
    const key = googleHttpError(
      'g',
      400,
      new Headers(),
      body(400, 'INVALID_ARGUMENT', [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID' }]),
    )
    expect({ code: key.code, unauthorized: key instanceof Unauthorized }).toEqual({ code: 'upstream_auth_failed', unauthorized: false })
    const invalid = googleHttpError('g', 400, new Headers(), `[${body(400, 'INVALID_ARGUMENT')}]`)
    expect({ type: invalid.type, status: invalid.details.status, message: invalid.message }).toEqual({
      type: 'invalid_request_error',
      status: 400,
      message: 'm INVALID_ARGUMENT',
    })
  })
})
