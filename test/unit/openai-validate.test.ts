import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { GatewayError } from '../../src/errors'
import { statusOf } from '../../src/http/errors'
import type { ChatRequest } from '../../src/wire/pivot/types'
import { checkChatRequest } from '../../src/wire/openai-chat/validate'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

const request = (messages: unknown[], extra: Record<string, unknown> = {}) => ({ model: 'a/b', messages, ...extra }) as unknown as ChatRequest

function refusal(body: ChatRequest): { param?: string; message: string } | null {
  try {
    checkChatRequest(body)
    return null
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError)
    const gatewayError = error as GatewayError
    expect(statusOf(gatewayError)).toBe(400)
    expect(gatewayError.type).toBe('invalid_request_error')
    return { param: gatewayError.param, message: gatewayError.message }
  }
}

describe('chat request structure', () => {
  test('accepts real content: every part type, every role, assistant messages with tool_calls and no content key, refusals, unknown parts', () => {
    const body = request([
      { role: 'system', content: 'sys' },
      { role: 'developer', content: [{ type: 'text', text: 'dev' }] },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'low' } },
          { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,/9j/4AAQ' } },
          { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
          { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' } },
          { type: 'file', file: { file_id: 'file-abc' } },
          { type: 'some_future_part', whatever: true },
        ],
        name: 'ann',
      },
      { role: 'assistant', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: [{ type: 'text', text: 'result' }] },
      { role: 'assistant', content: [{ type: 'refusal', refusal: 'no' }], refusal: 'no' },
      { role: 'assistant', content: null, function_call: { name: 'legacy', arguments: '{}' } },
      { role: 'function', name: 'legacy', content: null },
      { role: 'assistant', content: 'ok', thinking_blocks: [{ type: 'thinking', thinking: 't', signature: 's' }] },
      { role: 'user', content: 'go on' },
    ])
    expect(refusal(body)).toBeNull()
  })

  test('refuses only what is structurally wrong, naming the exact path', () => {
    const cases: [unknown[], string][] = [
      [[{ role: 'robot', content: 'x' }], 'messages.0.role'],
      [[{ content: 'x' }], 'messages.0.role'],
      [[{ role: 'user' }], 'messages.0.content'],
      [[{ role: 'user', content: null }], 'messages.0.content'],
      [[{ role: 'user', content: 5 }], 'messages.0.content'],
      [
        [
          { role: 'user', content: 'a' },
          { role: 'user', content: ['just a string'] },
        ],
        'messages.1.content.0',
      ],
      [
        [
          { role: 'user', content: 'a' },
          { role: 'assistant', content: 'b' },
          { role: 'user', content: [{ type: 'text', text: 'x' }, { text: 'no type' }] },
        ],
        'messages.2.content.1.type',
      ],
      [[{ role: 'user', content: [{ type: 7 }] }], 'messages.0.content.0.type'],
      [[{ role: 'user', content: [{ type: 'text' }] }], 'messages.0.content.0.text'],
      [[{ role: 'user', content: [{ type: 'image_url', image_url: 'https://x' }] }], 'messages.0.content.0.image_url'],
      [[{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'x' } }] }], 'messages.0.content.0.input_audio'],
      [
        [{ role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: {} } }] }],
        'messages.0.tool_calls.0.function.arguments',
      ],
      [[{ role: 'assistant', tool_calls: [{ type: 'function', function: { name: 'f', arguments: '{}' } }] }], 'messages.0.tool_calls.0.id'],
      [[{ role: 'tool', content: 'r' }], 'messages.0.tool_call_id'],
    ]
    for (const [messages, param] of cases)
      expect(`${JSON.stringify(messages)} -> ${refusal(request(messages))?.param}`).toBe(`${JSON.stringify(messages)} -> ${param}`)
    expect(refusal(request([{ role: 'user', content: 'x' }], { tools: [{ type: 'function', function: { description: 'no name' } }] }))?.param).toBe(
      'tools.0.function.name',
    )
    expect(refusal(request([{ role: 'user', content: 'x' }], { tools: [{ type: 'function', function: { name: 'f', parameters: 'nope' } }] }))?.param).toBe(
      'tools.0.function.parameters',
    )
    // A tool of a type the gateway does not know is not its to refuse.
    expect(refusal(request([{ role: 'user', content: 'x' }], { tools: [{ type: 'custom', custom: { name: 'grammar' } }] }))).toBeNull()
  })
})
