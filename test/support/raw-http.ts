import type { Socket } from 'bun'

/**
 * HTTP/1.1 requests over raw TCP sockets, for thousands of concurrent streams: `fetch` in the process
 * that sends them is itself capped (Bun's BUN_CONFIG_MAX_HTTP_REQUESTS, 256 by default; the rest wait
 * in its queue), and a bare socket per stream costs less than a fetch. One request per connection
 * (`Connection: close`), so the response ends when the server closes.
 */

/** What came back so far on one connection. */
export interface RawResponse {
  /** The status code, once the response head arrived. */
  status: number | null
  /** The response head (status line and headers), once it arrived. */
  head: string
  /** The body as sent (chunked framing included), its first KEPT_BYTES only. */
  body: string
  /** Bytes of body received. */
  bytes: number
  /** A chunked body's last chunk arrived: the server ended the response normally. */
  complete: boolean
  /** The connection is closed (by either side). */
  closed: boolean
  /** A socket error, if any. */
  error: string | null
}

export interface RawRequest {
  response: RawResponse
  /** Hangs up. */
  close(): void
}

const KEPT_BYTES = 64 * 1024
const LAST_CHUNK = '\r\n0\r\n\r\n'

/** Sends a POST of `body` (JSON) to `url` over a connection of its own; resolves once connected. */
export async function rawPost(url: string, headers: Record<string, string>, body: string): Promise<RawRequest> {
  const { hostname, port, pathname } = new URL(url)
  const response: RawResponse = { status: null, head: '', body: '', bytes: 0, complete: false, closed: false, error: null }
  let pending = ''
  let tail = ''
  const received = (text: string) => {
    if (response.status === null) {
      pending += text
      const end = pending.indexOf('\r\n\r\n')
      if (end < 0) return
      response.head = pending.slice(0, end)
      response.status = Number(/^HTTP\/1\.1 (\d{3})/.exec(response.head)?.[1] ?? 0)
      text = pending.slice(end + 4)
      pending = ''
      // A body with no chunks at all: the terminator is the first thing after the head.
      tail = '\r\n'
    }
    response.bytes += text.length
    if (response.body.length < KEPT_BYTES) response.body += text.slice(0, KEPT_BYTES - response.body.length)
    tail = (tail + text).slice(-LAST_CHUNK.length)
    if (tail === LAST_CHUNK) response.complete = true
  }
  const decoder = new TextDecoder()
  const head = [
    `POST ${pathname} HTTP/1.1`,
    `host: ${hostname}:${port}`,
    'content-type: application/json',
    `content-length: ${Buffer.byteLength(body)}`,
    'connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ].join('\r\n')
  let unsent = Buffer.from(`${head}\r\n\r\n${body}`)
  const send = (socket: Socket<undefined>) => {
    unsent = unsent.subarray(socket.write(unsent))
  }
  const socket: Socket<undefined> = await Bun.connect({
    hostname,
    port: Number(port),
    socket: {
      open: send,
      drain: send,
      data: (_socket, chunk) => received(decoder.decode(chunk, { stream: true })),
      close: () => void (response.closed = true),
      error: (_socket, error) => void (response.error = error.message),
      connectError: (_socket, error) => void (response.error = error.message),
    },
  })
  return { response, close: () => socket.end() }
}
