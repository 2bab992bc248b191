export interface SseEvent {
  event: string | null
  data: string
}

/**
 * Splits a text/event-stream body into events as bytes arrive: one batch per network read (the
 * events it completed), so a relay does one hop per read, not per event. Ends when the body ends.
 */
export async function* readSseBatches(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent[]> {
  const decoder = new TextDecoder()
  const reader = body.getReader()
  let buffer = ''
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      buffer += decoder.decode(value, { stream: true })
      const batch: SseEvent[] = []
      let end = eventEnd(buffer)
      while (end !== -1) {
        const parsed = parseBlock(buffer.slice(0, end.start))
        buffer = buffer.slice(end.next)
        if (parsed) batch.push(parsed)
        end = eventEnd(buffer)
      }
      if (batch.length > 0) yield batch
    }
  } finally {
    reader.releaseLock()
  }
}

function eventEnd(buffer: string): { start: number; next: number } | -1 {
  const lf = buffer.indexOf('\n\n')
  const crlf = buffer.indexOf('\r\n\r\n')
  if (lf === -1 && crlf === -1) return -1
  if (crlf !== -1 && (lf === -1 || crlf < lf)) return { start: crlf, next: crlf + 4 }
  return { start: lf, next: lf + 2 }
}

function parseBlock(block: string): SseEvent | null {
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
