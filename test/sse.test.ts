import { expect, test } from 'bun:test'
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
