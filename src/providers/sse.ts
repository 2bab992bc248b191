export interface SseEvent {
  event: string | null
  data: string
}

/**
 * Splits a text/event-stream body into events as bytes arrive: one batch per network read (the
 * events it completed), so a relay does one hop per read, not per event. Ends when the body ends.
 * One pass over the text: the search for the next blank line starts where the last event ended,
 * and CRLF line ends are looked for only once the stream has shown a carriage return.
 */
export async function* readSseBatches(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent[]> {
  const decoder = new TextDecoder()
  const reader = body.getReader()
  let buffer = ''
  let crlf = false
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      const text = decoder.decode(value, { stream: true })
      crlf ||= text.includes('\r')
      buffer = buffer === '' ? text : buffer + text
      const batch: SseEvent[] = []
      let start = 0
      for (;;) {
        const end = crlf ? eventEndCrlf(buffer, start) : buffer.indexOf('\n\n', start)
        if (end === -1) break
        const parsed = parseBlock(buffer.slice(start, end))
        if (parsed) batch.push(parsed)
        start = end + (buffer.charCodeAt(end) === 13 ? 4 : 2)
      }
      buffer = start === 0 ? buffer : buffer.slice(start)
      if (batch.length > 0) yield batch
    }
  } finally {
    reader.releaseLock()
  }
}

/** The start of the next blank line at or after `from`, whichever line end it uses. */
function eventEndCrlf(buffer: string, from: number): number {
  const lf = buffer.indexOf('\n\n', from)
  const crlf = buffer.indexOf('\r\n\r\n', from)
  if (crlf !== -1 && (lf === -1 || crlf < lf)) return crlf
  return lf
}

function parseBlock(block: string): SseEvent | null {
  // The usual event: one `data: ` line.
  if (block.startsWith('data: ') && !block.includes('\n')) return { event: null, data: block.slice(6) }
  let event: string | null = null
  let data: string | null = null
  for (const line of block.split(/\r?\n/)) {
    if (line.startsWith('data:')) {
      const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5)
      data = data === null ? value : `${data}\n${value}`
    } else if (line.startsWith('event:')) {
      event = line.slice(6).trim()
    }
  }
  return data === null ? null : { event, data }
}
