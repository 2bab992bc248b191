/**
 * The inbound side of the Gemini dialect, as pure functions (src/wire/gemini): a generateContent
 * request as the pivot, the pivot's answer and stream chunks as Google's, what is refused or left
 * out, and Google's error body. Shapes from https://ai.google.dev/api/generate-content.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { GatewayError, invalidRequest, notFound, rateLimited, unauthorized } from '../../src/errors'
import { toGenerateContentResponse, usageMetadataOf } from '../../src/wire/gemini/answer-from-chat'
import { googleErrorBody } from '../../src/wire/gemini/errors'
import { EventsFromChunks } from '../../src/wire/gemini/events-from-chunks'
import { chatCannotServe, checkGenerateContentRequest, droppedFromRequest } from '../../src/wire/gemini/inbound-cannot-serve'
import { jsonSchemaOf, splitModelAction } from '../../src/wire/gemini/inbound-types'
import { effortOfThinking, toChatRequest } from '../../src/wire/gemini/request-to-chat'
import type { GenerateContentRequest } from '../../src/wire/gemini/types'
import { reasoningSealer } from '../../src/wire/pivot/sealed-reasoning'
import type { ChatCompletion, ChatCompletionChunk } from '../../src/wire/pivot/types'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

const sealer = reasoningSealer('wire-test-secret-0123456789abcdef0123456789')
const options = { maxEffort: 'high', unseal: sealer.unseal }
const answerOptions = { responseId: 'r1', includeThoughts: true, origin: 'anthropic', seal: sealer.seal }

const completion = (
  message: Record<string, unknown>,
  finish = 'stop',
  usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
): ChatCompletion => ({
  id: 'c1',
  object: 'chat.completion',
  created: 0,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: null, refusal: null, ...message }, logprobs: null, finish_reason: finish }],
  usage,
})

const chunk = (delta: Record<string, unknown>, finish: string | null = null, usage?: Record<string, number>): ChatCompletionChunk => ({
  id: 'c1',
  object: 'chat.completion.chunk',
  created: 0,
  model: 'm',
  choices: [{ index: 0, delta, finish_reason: finish }],
  ...(usage ? { usage: usage as never } : {}),
})

describe('a generateContent request as the pivot (request-to-chat)', () => {
  test('system instruction, text and media parts, generation settings', () => {
    const request: GenerateContentRequest = {
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      contents: [
        {
          role: 'user',
          parts: [
            { text: 'Look:' },
            { inlineData: { mimeType: 'image/png', data: 'iVBO' } },
            { inlineData: { mimeType: 'application/pdf', data: 'JVBE' } },
            { fileData: { mimeType: 'image/jpeg', fileUri: 'https://example.com/a.jpg' } },
          ],
        },
      ],
      generationConfig: {
        maxOutputTokens: 100,
        temperature: 0.5,
        topP: 0.9,
        stopSequences: ['END'],
        seed: 3,
        responseMimeType: 'application/json',
        responseJsonSchema: { type: 'object' },
      },
    }
    const { chat } = toChatRequest(request, 'gpt-4o', true, options)
    expect(chat).toMatchObject({ model: 'gpt-4o', stream: true, max_completion_tokens: 100, temperature: 0.5, top_p: 0.9, stop: ['END'], seed: 3 })
    expect(chat.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'response', schema: { type: 'object' }, strict: true } })
    expect(chat.messages[0]).toEqual({ role: 'system', content: 'Be brief.' })
    expect(chat.messages[1]!.content).toEqual([
      { type: 'text', text: 'Look:' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBO' } },
      { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBE', filename: 'document.pdf' } },
      { type: 'image_url', image_url: { url: 'https://example.com/a.jpg' } },
    ])
  })

  test('function calls and their responses, matched by id, else by position and name; parallel calls in one assistant message', () => {
    const request: GenerateContentRequest = {
      contents: [
        { role: 'user', parts: [{ text: 'go' }] },
        {
          role: 'model',
          parts: [{ functionCall: { name: 'a', args: { x: 1 } } }, { functionCall: { name: 'a', args: { x: 2 } } }, { functionCall: { id: 'own', name: 'b' } }],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { id: 'own', name: 'b', response: { output: 'B' } } },
            { functionResponse: { name: 'a', response: { output: 'A1' } } },
            { functionResponse: { name: 'a', response: { error: 'broke' } } },
          ],
        },
      ],
      tools: [
        {
          functionDeclarations: [
            { name: 'a', parametersJsonSchema: { type: 'object' } },
            { name: 'b', parameters: { type: 'OBJECT', properties: { q: { type: 'STRING', nullable: true } } } } as never,
          ],
        },
      ],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['b'] } },
    }
    const { chat } = toChatRequest(request, 'm', false, options)
    const assistant = chat.messages[1]!
    expect(assistant.tool_calls!.map((c) => [c.id, c.function.name, c.function.arguments])).toEqual([
      ['call_1_0', 'a', '{"x":1}'],
      ['call_1_1', 'a', '{"x":2}'],
      ['own', 'b', '{}'],
    ])
    expect(chat.messages.slice(2)).toEqual([
      { role: 'tool', tool_call_id: 'own', content: 'B' },
      { role: 'tool', tool_call_id: 'call_1_0', content: 'A1' },
      { role: 'tool', tool_call_id: 'call_1_1', content: 'Error: broke' },
    ])
    // ANY with one allowed name: that function, the only one offered; Google's schema as JSON Schema.
    expect(chat.tool_choice).toEqual({ type: 'function', function: { name: 'b' } })
    expect(chat.tools).toEqual([{ type: 'function', function: { name: 'b', parameters: { type: 'object', properties: { q: { type: ['string', 'null'] } } } } }])
  })

  test("thinking settings as reasoning_effort, by Google's own steps, capped", () => {
    expect(effortOfThinking({ includeThoughts: true }, 'high')).toBeUndefined()
    expect(effortOfThinking({ thinkingBudget: 0 }, 'high')).toBe('none')
    expect(effortOfThinking({ thinkingBudget: -1 }, 'high')).toBe('medium')
    expect(effortOfThinking({ thinkingBudget: 1024 }, 'high')).toBe('low')
    expect(effortOfThinking({ thinkingBudget: 8192 }, 'high')).toBe('medium')
    expect(effortOfThinking({ thinkingBudget: 20000 }, 'xhigh')).toBe('high')
    expect(effortOfThinking({ thinkingBudget: 30000 }, 'high')).toBe('high')
    expect(effortOfThinking({ thinkingLevel: 'LOW' }, 'high')).toBe('low')
  })

  test("a signature this gateway sealed brings the reasoning back; Google's own and Gemini CLI's stand-in do not (and are named)", () => {
    const blocks = [{ type: 'thinking' as const, thinking: 'hmm', signature: 'sig' }]
    const sealed = sealer.seal({ origin: 'anthropic', thinking_blocks: blocks, reasoning_content: 'hmm' })
    const turn = (signature: string): GenerateContentRequest => ({
      contents: [
        { role: 'user', parts: [{ text: 'go' }] },
        { role: 'model', parts: [{ functionCall: { name: 'a' }, thoughtSignature: signature }] },
        { role: 'user', parts: [{ functionResponse: { name: 'a', response: {} } }] },
      ],
    })
    const restored = toChatRequest(turn(sealed), 'm', false, options)
    expect(restored.chat.messages[1]).toMatchObject({ thinking_blocks: blocks, reasoning_content: 'hmm' })
    expect(restored.foreignSignatures).toBe(false)
    const skip = toChatRequest(turn('skip_thought_signature_validator'), 'm', false, options)
    expect(skip.chat.messages[1]!.thinking_blocks).toBeUndefined()
    expect(skip.foreignSignatures).toBe(false)
    expect(toChatRequest(turn('Z29vZ2xl'), 'm', false, options).foreignSignatures).toBe(true)
  })
})

describe('what a translated target cannot be given, and what it goes without', () => {
  const base = (extra: Partial<GenerateContentRequest>): GenerateContentRequest => ({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }], ...extra })
  test.each([
    [{ tools: [{ googleSearch: {} }] }, 'tools.0.googleSearch'],
    [{ contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'video/mp4', data: 'AA' } }] }] }, 'contents.0.parts.0.inlineData.mimeType'],
    [{ contents: [{ role: 'user', parts: [{ fileData: { fileUri: 'gs://b/o.pdf', mimeType: 'application/pdf' } }] }] }, 'contents.0.parts.0.fileData'],
    [{ contents: [{ role: 'user', parts: [{ executableCode: { code: 'x' } }] }] }, 'contents.0.parts.0.executableCode'],
    [{ generationConfig: { candidateCount: 2 } }, 'generationConfig.candidateCount'],
    [{ generationConfig: { responseModalities: ['IMAGE'] } }, 'generationConfig.responseModalities'],
    [{ generationConfig: { speechConfig: {} } }, 'generationConfig.speechConfig'],
    [{ cachedContent: 'cachedContents/x' }, 'cachedContent'],
  ] as [Partial<GenerateContentRequest>, string][])('%j is refused naming %s', (extra, param) => {
    expect(chatCannotServe(base(extra))?.param).toBe(param)
  })

  test('hints are named in x-svc-dropped', () => {
    const request = base({
      safetySettings: [],
      generationConfig: { topK: 40 },
      tools: [{ functionDeclarations: [{ name: 'a', behavior: 'NON_BLOCKING' } as never] }],
    })
    expect(chatCannotServe(request)).toBeNull()
    expect(droppedFromRequest(request)).toEqual(['safetySettings', 'generationConfig.topK', 'functionDeclarations.behavior'])
  })

  test('the shape every target needs', () => {
    expect(() => checkGenerateContentRequest({ contents: [] })).toThrow('contents must be a non-empty array')
    expect(() => checkGenerateContentRequest({ contents: [{ role: 'bot', parts: [] }] } as never)).toThrow('contents.0.role')
    expect(() => checkGenerateContentRequest({ contents: [{ role: 'user' }] } as never)).toThrow('contents.0.parts')
  })
})

describe("the pivot's answer as Google's (answer-from-chat, events-from-chunks)", () => {
  test('text, a thought summary, function calls with their ids, the reasoning sealed on the first call; usage with thoughts apart', () => {
    const answer = toGenerateContentResponse(
      completion(
        {
          content: 'Let me look.',
          reasoning_content: 'thinking it over',
          tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'read', arguments: '{"p":"a"}' } }],
        },
        'tool_calls',
        {
          prompt_tokens: 10,
          completion_tokens: 9,
          total_tokens: 19,
          completion_tokens_details: { reasoning_tokens: 4 },
          prompt_tokens_details: { cached_tokens: 2 },
        } as never,
      ),
      'anthropic/smart',
      answerOptions,
    )
    const parts = answer.candidates![0]!.content!.parts
    expect(parts[0]).toEqual({ text: 'thinking it over', thought: true })
    expect(parts[1]).toEqual({ text: 'Let me look.' })
    expect(parts[2]!.functionCall).toEqual({ id: 'toolu_1', name: 'read', args: { p: 'a' } })
    expect(sealer.unseal(parts[2]!.thoughtSignature!)).toEqual({ origin: 'anthropic', reasoning_content: 'thinking it over' })
    expect(answer.candidates![0]!.finishReason).toBe('STOP')
    expect(answer).toMatchObject({ modelVersion: 'anthropic/smart', responseId: 'r1' })
    expect(answer.usageMetadata).toEqual({
      promptTokenCount: 10,
      candidatesTokenCount: 5,
      thoughtsTokenCount: 4,
      cachedContentTokenCount: 2,
      totalTokenCount: 19,
    })
  })

  test('finish reasons: length is MAX_TOKENS, a content filter SAFETY', () => {
    expect(toGenerateContentResponse(completion({ content: 'x' }, 'length'), 'a', answerOptions).candidates![0]!.finishReason).toBe('MAX_TOKENS')
    expect(toGenerateContentResponse(completion({ content: '' }, 'content_filter'), 'a', answerOptions).candidates![0]!.finishReason).toBe('SAFETY')
  })

  test('pivot usage as usageMetadata: thoughts apart from the answer, nothing when nothing was reported', () => {
    expect(usageMetadataOf({ prompt_tokens: 105, completion_tokens: 50, total_tokens: 155, completion_tokens_details: { reasoning_tokens: 30 } })).toEqual({
      promptTokenCount: 105,
      candidatesTokenCount: 20,
      thoughtsTokenCount: 30,
      totalTokenCount: 155,
    })
    expect(usageMetadataOf(null)).toEqual({ promptTokenCount: 0, candidatesTokenCount: 0, totalTokenCount: 0 })
  })

  test('a stream: text as it comes, thoughts when asked for, calls whole in the last chunk with the signature, the finish reason and the usage', () => {
    const events = new EventsFromChunks('local/echo', answerOptions)
    const out = [
      ...events.push(chunk({ role: 'assistant', content: '' })),
      ...events.push(chunk({ reasoning_content: 'hm' })),
      ...events.push(chunk({ content: 'Hi ' })),
      ...events.push(chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a"' } }] })),
      ...events.push(chunk({ tool_calls: [{ index: 0, function: { arguments: ':1}' } }] })),
      ...events.push(chunk({}, 'tool_calls')),
      ...events.push({ ...chunk({}), choices: [], usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } }),
    ]
    expect(out.map((c) => c.candidates![0]!.content!.parts)).toEqual([[{ text: 'hm', thought: true }], [{ text: 'Hi ' }]])
    const [last] = events.end()
    expect(last!.candidates![0]!.finishReason).toBe('STOP')
    const call = last!.candidates![0]!.content!.parts[0]!
    expect(call.functionCall).toEqual({ id: 'call_1', name: 'f', args: { a: 1 } })
    expect(sealer.unseal(call.thoughtSignature!)?.reasoning_content).toBe('hm')
    expect(last!.usageMetadata).toEqual({ promptTokenCount: 3, candidatesTokenCount: 4, totalTokenCount: 7 })
    expect(events.usage?.total_tokens).toBe(7)
  })
})

describe("Google's error body and the methods' paths", () => {
  test('code, status, and the details Google clients read', () => {
    expect(googleErrorBody(unauthorized())).toEqual({
      error: {
        code: 401,
        message: 'Unauthorized',
        status: 'UNAUTHENTICATED',
        details: [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: 'AUTHENTICATION_ERROR',
            domain: 'chatgate',
            metadata: { type: 'authentication_error' },
          },
        ],
      },
    })
    const limited = googleErrorBody(rateLimited('Too many', { code: 'rate_limit_exceeded', retryAfterSeconds: 12 }))
    expect(limited.error).toMatchObject({ code: 429, status: 'RESOURCE_EXHAUSTED' })
    expect(limited.error.details).toContainEqual({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '12s' })
    const bad = googleErrorBody(invalidRequest('no', { param: 'contents' }))
    expect(bad.error.details).toContainEqual({
      '@type': 'type.googleapis.com/google.rpc.BadRequest',
      fieldViolations: [{ field: 'contents', description: 'no' }],
    })
    expect(googleErrorBody(notFound('gone')).error.status).toBe('NOT_FOUND')
    expect(googleErrorBody(new GatewayError('upstream_error', 'down')).error).toMatchObject({ code: 502, status: 'UNAVAILABLE' })
    expect(googleErrorBody(invalidRequest('big', { status: 413 })).error).toMatchObject({ code: 413, status: 'INVALID_ARGUMENT' })
  })

  test("`name:method` split at its last colon; Google's schema as JSON Schema", () => {
    expect(splitModelAction('gpt-5.6:generateContent')).toEqual({ name: 'gpt-5.6', method: 'generateContent' })
    expect(splitModelAction('a:b:countTokens')).toEqual({ name: 'a:b', method: 'countTokens' })
    expect(splitModelAction('echo')).toBeNull()
    expect(jsonSchemaOf({ type: 'ARRAY', items: { type: 'INTEGER', format: 'int32' }, propertyOrdering: ['x'], example: 1 })).toEqual({
      type: 'array',
      items: { type: 'integer', format: 'int32' },
    })
  })
})
