export interface SseEvent {
  event: string | null
  data: string
}

/** An event longer than the cap: the upstream is broken or hostile, and the attempt fails. */
export class SseEventTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`a stream event is longer than ${limit} characters`)
    this.name = 'SseEventTooLarge'
  }
}

/**
 * Splits a text/event-stream body into events as bytes arrive: one batch per network read (the
 * events it completed), so a relay does one hop per read, not per event. Ends when the body ends.
 * One pass over the text: each search for the next blank line starts where the last one stopped,
 * even while one event spans many reads, and CRLF line ends are looked for only once the stream has
 * shown a carriage return. An event longer than `maxEventChars` throws SseEventTooLarge: without a
 * cap, an upstream that never ends its event would grow the buffer without bound.
 */
export async function* readSseBatches(body: ReadableStream<Uint8Array>, maxEventChars: number): AsyncGenerator<SseEvent[]> {
  const decoder = new TextDecoder()
  const reader = body.getReader()
  let buffer = ''
  let crlf = false
  // Where the next search for a blank line begins: what came before was searched already.
  let searchFrom = 0
  let ended = false
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) {
        ended = true
        break
      }
      const text = decoder.decode(value, { stream: true })
      crlf ||= text.includes('\r')
      buffer = buffer === '' ? text : buffer + text
      const batch: SseEvent[] = []
      let start = 0
      for (;;) {
        const from = Math.max(start, searchFrom)
        const end = crlf ? eventEndCrlf(buffer, from) : buffer.indexOf('\n\n', from)
        if (end === -1) break
        const parsed = parseBlock(buffer.slice(start, end))
        if (parsed) batch.push(parsed)
        start = end + (buffer.charCodeAt(end) === 13 ? 4 : 2)
      }
      buffer = start === 0 ? buffer : buffer.slice(start)
      // A blank line may straddle this read and the next: back up by its longest form, less one.
      searchFrom = Math.max(0, buffer.length - 3)
      if (buffer.length > maxEventChars) throw new SseEventTooLarge(maxEventChars)
      if (batch.length > 0) yield batch
    }
  } finally {
    // Stopped early (an event past the cap, the consumer gone): hang up on the upstream rather than
    // leave its connection open with unread bytes. A body read to its end needs nothing more: its
    // lock is not released (that makes a TypeError for the reader's closed promise, every stream).
    if (!ended) await reader.cancel().catch(() => {})
  }
}

/** The start of the next blank line at or after `from`, whichever line end it uses. */
function eventEndCrlf(buffer: string, from: number): number {
  const lf = buffer.indexOf('\n\n', from)
  const crlf = buffer.indexOf('\r\n\r\n', from)
  if (crlf !== -1 && (lf === -1 || crlf < lf)) return crlf
  return lf
}

/**
 * One event's fields. Lines are found with indexOf, not a regex split: OpenAI's Responses streams and
 * Anthropic's name every event (`event:` then `data:`), so this runs for each of their events.
 */
function parseBlock(block: string): SseEvent | null {
  // The usual event: one `data: ` line.
  if (block.startsWith('data: ') && !block.includes('\n')) return { event: null, data: block.slice(6) }
  let event: string | null = null
  let data: string | null = null
  for (let start = 0; start < block.length;) {
    const newline = block.indexOf('\n', start)
    const next = newline === -1 ? block.length : newline
    const end = next > start && block.charCodeAt(next - 1) === 13 ? next - 1 : next
    if (block.startsWith('data:', start)) {
      const value = block.slice(block.charCodeAt(start + 5) === 32 ? start + 6 : start + 5, end)
      data = data === null ? value : `${data}\n${value}`
    } else if (block.startsWith('event:', start)) {
      event = block.slice(start + 6, end).trim()
    }
    start = next + 1
  }
  return data === null ? null : { event, data }
}
