import { describe, expect, test } from 'bun:test'
import { completionJson, swapModel } from '../src/chat/relay'
import type { ChatCompletion } from '../src/chat/types'
import { readSseBatches } from '../src/providers/sse'

const streamOf = (parts: string[]) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const part of parts) controller.enqueue(new TextEncoder().encode(part))
      controller.close()
    },
  })

test('events split across reads, CRLF endings, multi-line data and named events', async () => {
  const events = []
  for await (const batch of readSseBatches(
    streamOf(['data: {"a"', ':1}\n\nevent: message_start\r\ndata: x\r\n\r\n', ': comment\n\ndata: l1\ndata: l2\n\n', 'data: partial']),
  )) {
    events.push(...batch)
  }
  expect(events).toEqual([
    { event: null, data: '{"a":1}' },
    { event: 'message_start', data: 'x' },
    { event: null, data: 'l1\nl2' },
  ])
})

test('CRLF events after LF ones in the same read, and a blank line split across reads', async () => {
  const events = []
  for await (const batch of readSseBatches(streamOf(['data: 1\n\ndata: 2\r\n\r\ndata: 3\n', '\ndata: 4\r\n', '\r\n']))) events.push(...batch.map((e) => e.data))
  expect(events).toEqual(['1', '2', '3', '4'])
})

describe('completionJson', () => {
  const upstream = (text: string) => ({ text, completion: JSON.parse(text) as ChatCompletion })

  test("relays the upstream's own text with only the model swapped: unknown fields and formatting kept", () => {
    const { text, completion } = upstream(
      '{"id":"c1","object":"chat.completion","created":1,"model":"gpt-x-2026","system_fingerprint":"fp_1","choices":[{"index":0,"message":{"role":"assistant","content":"the \\"model\\":\\"gpt-x-2026\\" field"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":0}}}',
    )
    const relayed = completionJson(completion, text, 'openai/fast')
    expect(relayed).toBe(text.replace('"model":"gpt-x-2026"', '"model":"openai/fast"'))
    expect(JSON.parse(relayed)).toMatchObject({ model: 'openai/fast', system_fingerprint: 'fp_1', usage: { prompt_tokens_details: { cached_tokens: 0 } } })
  })

  test('re-serializes when the text cannot be patched safely: no usage, the field written twice, or spaced', () => {
    for (const text of [
      '{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[]}',
      '{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2},"extra":{"model":"m"}}',
      '{"id":"c","object":"chat.completion","created":1,"model": "m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}',
    ]) {
      const out = JSON.parse(completionJson(JSON.parse(text) as ChatCompletion, text, 'a/b')) as ChatCompletion
      expect(out.model).toBe('a/b')
      expect(out.usage).toBeDefined()
    }
  })
})

describe('swapModel', () => {
  test('changes the value of the one "model" key holding it, spaces around the colon allowed', () => {
    expect(swapModel('{"model":"a","x":1}', 'a', 'b/c')).toBe('{"model":"b/c","x":1}')
    expect(swapModel('{ "model" :\n "a" }', 'a', 'b')).toBe('{ "model" :\n "b" }')
    // A value "model" (Gemini's role) is not a key; another key named model with another value is left alone.
    expect(swapModel('{"role":"model","meta":{"model":"z"},"model":"a"}', 'a', 'b')).toBe('{"role":"model","meta":{"model":"z"},"model":"b"}')
  })

  test('null when the value is missing, spelled otherwise, or held by two "model" keys', () => {
    expect(swapModel('{"model":"ab"}', 'a', 'b')).toBeNull()
    expect(swapModel('{"models":"a"}', 'a', 'b')).toBeNull()
    expect(swapModel('{"model":"a","meta":{"model":"a"}}', 'a', 'b')).toBeNull()
    expect(swapModel('{"content":"\\"model\\":\\"a\\""}', 'a', 'b')).toBeNull()
  })
})
