/**
 * A transparent TCP relay on 127.0.0.1 in front of a server, recording the HTTP/1.1 requests that
 * pass through it exactly as the client wrote them (head and body; chunked bodies joined), while the
 * bytes go both ways untouched: what a compiled client (Codex) really sends, headers included, with
 * nothing decoded or re-encoded on the way.
 */
import type { Socket } from 'bun'

export interface TappedRequest {
  method: string
  path: string
  /** Header names in lower case, as sent. */
  headers: Record<string, string>
  /** The body as sent (decoded from chunked transfer encoding, never decompressed). */
  body: Buffer
}

/** The complete requests in `buffer`, and what is left of it (an incomplete request). */
function parseRequests(buffer: Buffer): { requests: TappedRequest[]; rest: Buffer } {
  const requests: TappedRequest[] = []
  let rest = buffer
  for (;;) {
    const headEnd = rest.indexOf('\r\n\r\n')
    if (headEnd === -1) break
    const [requestLine, ...headerLines] = rest.subarray(0, headEnd).toString('latin1').split('\r\n')
    const [method = '', path = ''] = requestLine!.split(' ')
    const headers: Record<string, string> = {}
    for (const line of headerLines) {
      const colon = line.indexOf(':')
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
    }
    let at = headEnd + 4
    let body: Buffer
    if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
      const parts: Buffer[] = []
      let complete = false
      for (;;) {
        const lineEnd = rest.indexOf('\r\n', at)
        if (lineEnd === -1) break
        const size = Number.parseInt(rest.subarray(at, lineEnd).toString('latin1'), 16)
        if (rest.length < lineEnd + 2 + size + 2) break
        if (size === 0) {
          const trailerEnd = rest.indexOf('\r\n\r\n', lineEnd)
          if (trailerEnd === -1 && rest.subarray(lineEnd + 2, lineEnd + 4).toString() !== '\r\n') break
          at = lineEnd + 4
          complete = true
          break
        }
        parts.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size))
        at = lineEnd + 2 + size + 2
      }
      if (!complete) break
      body = Buffer.concat(parts)
    } else {
      const length = Number(headers['content-length'] ?? 0)
      if (rest.length < at + length) break
      body = Buffer.from(rest.subarray(at, at + length))
      at += length
    }
    requests.push({ method, path, headers, body })
    rest = rest.subarray(at)
  }
  return { requests, rest: Buffer.from(rest) }
}

export interface Tap {
  /** `http://127.0.0.1:<port>` */
  url: string
  requests: TappedRequest[]
  stop(): void
}

/** Writes to a socket that may take only part of a write: the rest goes out on `drain`. */
class Writer {
  private pending: Buffer = Buffer.alloc(0)
  private ending = false
  constructor(private socket: Socket<any>) {}
  write(chunk: Buffer): void {
    this.pending = Buffer.concat([this.pending, chunk])
    this.flush()
  }
  flush(): void {
    if (this.pending.length > 0) {
      const written = this.socket.write(this.pending)
      this.pending = this.pending.subarray(Math.max(0, written))
    }
    if (this.ending && this.pending.length === 0) this.socket.end()
  }
  /** Ends the socket once what is pending is written. */
  end(): void {
    this.ending = true
    this.flush()
  }
}

interface Pair {
  client: Writer
  upstream: Writer | null
  /** Client bytes not yet written upstream (before it connected). */
  queued: Buffer[]
  /** Client bytes not yet parsed into requests. */
  unparsed: Buffer
}

/** A relay to `target` (`http://127.0.0.1:PORT`), recording every request. */
export function tcpTap(target: string): Tap {
  const { hostname, port } = new URL(target)
  const requests: TappedRequest[] = []
  const listener = Bun.listen<Pair>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(client) {
        client.data = { client: new Writer(client), upstream: null, queued: [], unparsed: Buffer.alloc(0) }
        Bun.connect({
          hostname,
          port: Number(port),
          socket: {
            open(upstream) {
              const writer = new Writer(upstream)
              client.data.upstream = writer
              for (const chunk of client.data.queued) writer.write(chunk)
              client.data.queued = []
            },
            data(_upstream, data) {
              client.data.client.write(Buffer.from(data))
            },
            drain() {
              client.data.upstream?.flush()
            },
            close() {
              client.data.client.end()
            },
            error() {
              client.data.client.end()
            },
          },
        }).catch(() => client.end())
      },
      data(client, data) {
        const chunk = Buffer.from(data)
        const parsed = parseRequests(Buffer.concat([client.data.unparsed, chunk]))
        requests.push(...parsed.requests)
        client.data.unparsed = parsed.rest
        if (client.data.upstream) client.data.upstream.write(chunk)
        else client.data.queued.push(chunk)
      },
      drain(client) {
        client.data.client.flush()
      },
      close(client) {
        client.data.upstream?.end()
      },
      error(client) {
        client.data.upstream?.end()
      },
    },
  })
  return { url: `http://127.0.0.1:${listener.port}`, requests, stop: () => listener.stop(true) }
}
