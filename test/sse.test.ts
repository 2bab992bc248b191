import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { completionJson } from '../src/wire/openai-chat/answer'
import { ChunkRelay } from '../src/wire/openai-chat/stream'
import type { ChatCompletion } from '../src/wire/pivot/types'
import { readSseBatches } from '../src/providers/sse'
import { TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

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
    1024,
  )) {
    events.push(...batch)
  }
  expect(events).toEqual([
    { event: null, data: '{"a":1}' },
    { event: 'message_start', data: 'x' },
    { event: null, data: 'l1\nl2' },
  ])
})

test('field values: no space after the colon, empty data lines, comments and unknown fields between', async () => {
  const events = []
  for await (const batch of readSseBatches(
    streamOf(['event:response.created\ndata:{"a":1}\n\n', 'event: x\r\n: note\r\nid: 7\r\ndata:\r\ndata: two\r\n\r\n', 'data:\n\n']),
    1024,
  ))
    events.push(...batch)
  expect(events).toEqual([
    { event: 'response.created', data: '{"a":1}' },
    { event: 'x', data: '\ntwo' },
    { event: null, data: '' },
  ])
})

test('CRLF events after LF ones in the same read, and a blank line split across reads', async () => {
  const events = []
  for await (const batch of readSseBatches(streamOf(['data: 1\n\ndata: 2\r\n\r\ndata: 3\n', '\ndata: 4\r\n', '\r\n']), 1024))
    events.push(...batch.map((e) => e.data))
  expect(events).toEqual(['1', '2', '3', '4'])
})

test('an event split over many reads is found once it ends; one longer than the cap throws', async () => {
  const long = 'x'.repeat(300)
  const pieces = ['data: ', ...Array.from({ length: 3 }, () => long), '\n', '\ndata: next\n\n']
  const events = []
  for await (const batch of readSseBatches(streamOf(pieces), 1024)) events.push(...batch.map((e) => e.data.length))
  expect(events).toEqual([900, 4])

  const endless = streamOf(['data: {"id":"', ...Array.from({ length: 10 }, () => long)])
  const read = async () => {
    for await (const _ of readSseBatches(endless, 1024));
  }
  await expect(read()).rejects.toThrow('a stream event is longer than 1024 characters')
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

  test('a nested "model" and spacing around the colon are kept as sent; only the top-level value changes', () => {
    const text =
      '{"id":"c","object":"chat.completion","created":1,"model" : "m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2},"extra":{"model":"m"}}'
    expect(completionJson(JSON.parse(text) as ChatCompletion, text, 'a/b')).toBe(text.replace('"model" : "m"', '"model" : "a/b"'))
  })

  test('re-serializes when the text cannot be patched safely: no usage, or the top-level field written twice', () => {
    for (const text of [
      '{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[]}',
      '{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2},"model":"n"}',
    ]) {
      const out = JSON.parse(completionJson(JSON.parse(text) as ChatCompletion, text, 'a/b')) as ChatCompletion
      expect(out.model).toBe('a/b')
      expect(out.usage).toBeDefined()
    }
  })
})

describe('ChunkRelay', () => {
  test('replaces only the top-level model of each raw chunk; nested "model" keys and strings are content', () => {
    const relay = new ChunkRelay('a/b', false)
    const data =
      '{"id":"c","object":"chat.completion.chunk","created":1,"meta":{"model":"gpt-x"},"model":"gpt-x","choices":[{"index":0,"delta":{"content":"\\"model\\":\\"gpt-x\\""},"finish_reason":null}],"usage":null}'
    // The usage the gateway asked for on the caller's behalf goes too: the caller did not ask for it.
    expect(relay.wire([{ data }])).toBe(`data: ${data.replace('"model":"gpt-x","choices"', '"model":"a/b","choices"').replace(',"usage":null', '')}\n\n`)
    const asked = new ChunkRelay('a/b', true)
    expect(asked.wire([{ data }])).toBe(`data: ${data.replace('"model":"gpt-x","choices"', '"model":"a/b","choices"')}\n\n`)
  })

  test('after the first chunk: the fast path gives the same text as the exact one, whatever the spacing', () => {
    const chunk = (content: string, usage: string) =>
      `{"id":"c","object":"chat.completion.chunk","created":1,"model" : "gpt-x","choices":[{"index":0,"delta":{"content":"${content}"},"finish_reason":null}]${usage}}`
    for (const usage of ['', ',"usage":null', ', "usage" : null']) {
      const relay = new ChunkRelay('a/b', false)
      const expected = (content: string) => `data: ${chunk(content, '').replace('"model" : "gpt-x"', '"model" : "a/b"')}\n\n`
      expect(relay.wire([{ data: chunk('one', usage) }])).toBe(expected('one'))
      expect(relay.wire([{ data: chunk('two', usage) }])).toBe(expected('two'))
      // Asked for usage: every chunk before the usage chunk says `"usage": null`, added where the upstream left it out.
      const asked = new ChunkRelay('a/b', true)
      const withNull = usage === '' ? ',"usage":null' : usage
      expect(asked.wire([{ data: chunk('one', usage) }, { data: chunk('two', usage) }])).toBe(
        `data: ${chunk('one', withNull).replace('"gpt-x"', '"a/b"')}\n\ndata: ${chunk('two', withNull).replace('"gpt-x"', '"a/b"')}\n\n`,
      )
    }
  })

  test('captures usage, and drops the usage chunk the caller did not ask for', () => {
    const relay = new ChunkRelay('a/b', false)
    const usage =
      '{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":2,"completion_tokens":3,"total_tokens":5}}'
    expect(relay.wire([{ data: usage }])).toBe('')
    expect(relay.usage).toEqual({ prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 })
    const asked = new ChunkRelay('a/b', true)
    expect(JSON.parse(asked.wire([{ data: usage }]).slice(6))).toMatchObject({ model: 'a/b', usage: { total_tokens: 5 } })
  })
})
