/**
 * Hostile upstreams and idle connections, against the real server (`bun src/main.ts`) and real
 * upstreams on 127.0.0.1: an SSE event that never ends, a JSON answer far too large, connections
 * held open to exhaust the process's file descriptors, and a transport error whose URL holds a
 * credential.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { Socket, Subprocess } from 'bun'
import { readFileSync } from 'node:fs'
import { temporaryBuild } from '../../scripts/build'
import { ROOT, tempDir, writeConfig } from '../support/gateway'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { refusingPort } from '../support/refusing-port'
import { waitFor } from '../support/wait'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

const MB = 1024 * 1024
const ALIAS = 'hostile/model'
const ADMIN_KEY = 'admin-key-for-hardening-0123456789'
const encoder = new TextEncoder()

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024

/**
 * Samples a process's RSS every few milliseconds and keeps the peak. Past `limitMb` of growth it
 * calls `onExceed` once, so an unbounded gateway fails the test at once instead of eating the machine.
 */
function watchRss(pid: number, limitMb: number, onExceed: () => void) {
  const baseline = rssMb(pid)
  let peak = baseline
  let fired = false
  const sample = () => {
    try {
      peak = Math.max(peak, rssMb(pid))
    } catch {
      return // the process is gone: its last sample stands
    }
    if (!fired && peak - baseline > limitMb) {
      fired = true
      onExceed()
    }
  }
  const timer = setInterval(sample, 5)
  return {
    /** Peak growth in MB so far. */
    growth: () => (sample(), peak - baseline),
    stop: () => clearInterval(timer),
  }
}

/** What the hostile upstream did for one request. */
interface Served {
  mode: string
  /** Bytes of body written so far. */
  bytes: number
  /** The gateway closed the connection before the body ended. */
  aborted: boolean
  /** The body was written to its end. */
  finished: boolean
}

/**
 * A body of `head`, then `fillerBytes` of `a` in 64 KiB pieces, then `tail`; written only as fast as
 * the reader takes it, and no further once the request's connection is gone.
 */
function piecedBody(head: string, fillerBytes: number, tail: string, served: Served, signal: AbortSignal): ReadableStream<Uint8Array> {
  let left = fillerBytes
  let headSent = false
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (signal.aborted) return controller.close()
      let piece: Uint8Array
      if (!headSent) {
        headSent = true
        piece = encoder.encode(head)
      } else if (left > 0) {
        piece = new Uint8Array(Math.min(left, 65_536)).fill(0x61)
        left -= piece.byteLength
      } else {
        if (tail !== '') controller.enqueue(encoder.encode(tail))
        served.bytes += tail.length
        served.finished = true
        return controller.close()
      }
      served.bytes += piece.byteLength
      controller.enqueue(piece)
    },
  })
}

const chunkEvent = (content: string) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-h', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'hm', choices: [{ index: 0, delta: { role: 'assistant', content }, finish_reason: null }] })}\n\n`

const COMPLETION_HEAD =
  '{"id":"chatcmpl-huge","object":"chat.completion","created":1700000000,"model":"hm","choices":[{"index":0,"message":{"role":"assistant","content":"'
const COMPLETION_TAIL = '"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}'

/** How much a hostile upstream sends at most: far past every cap, bounded so a broken gateway cannot hang the suite. */
const ENDLESS_EVENT_BYTES = 200 * MB
const HUGE_JSON_BYTES = 100 * MB

/**
 * An OpenAI-compatible upstream that misbehaves as the last message asks:
 * - `endless-event`: a stream whose first event never ends (`data: {"id":"` and then only `a`s);
 * - `chunk-then-endless-event`: one valid chunk, then that same endless event;
 * - `huge-json-length` / `huge-json-chunked`: a 100 MB chat completion, with a content-length or chunked;
 * - anything else: a small valid answer.
 */
function hostileUpstream() {
  const served: Served[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const body = (await req.json()) as { stream?: boolean; messages: { content: string }[] }
      const mode = body.messages.at(-1)!.content
      const record: Served = { mode, bytes: 0, aborted: false, finished: false }
      served.push(record)
      req.signal.addEventListener('abort', () => void (record.aborted = !record.finished), { once: true })
      const sse = { 'content-type': 'text/event-stream' }
      switch (mode) {
        case 'endless-event':
          return new Response(piecedBody('data: {"id":"', ENDLESS_EVENT_BYTES, '', record, req.signal), { headers: sse })
        case 'chunk-then-endless-event':
          return new Response(piecedBody(`${chunkEvent('first words')}data: {"id":"`, ENDLESS_EVENT_BYTES, '', record, req.signal), { headers: sse })
        case 'huge-json-length':
        case 'huge-json-chunked': {
          const filler = HUGE_JSON_BYTES - COMPLETION_HEAD.length - COMPLETION_TAIL.length
          const headers: Record<string, string> = { 'content-type': 'application/json' }
          if (mode === 'huge-json-length') headers['content-length'] = String(HUGE_JSON_BYTES)
          return new Response(piecedBody(COMPLETION_HEAD, filler, COMPLETION_TAIL, record, req.signal), { headers })
        }
        default:
          record.finished = true
          if (body.stream) return new Response(`${chunkEvent('fine')}data: [DONE]\n\n`, { headers: sse })
          return new Response(`${COMPLETION_HEAD}fine${COMPLETION_TAIL}`, { headers: { 'content-type': 'application/json' } })
      }
    },
  })
  return { url: `http://127.0.0.1:${server.port}/v1`, served, stop: () => void server.stop(true) }
}

/** A config with one OpenAI-compatible upstream, tried once per request, behind one alias. */
const gatewayConfig = (dir: string, baseUrl: string) =>
  writeConfig(
    dir,
    `
[tiers.main]
requests_per_minute = 100000
tokens_per_minute = 1000000000
max_concurrent = 64

[upstreams.hostile]
kind = "openai"
base_url = "${baseUrl}"
max_retries = 0
timeout_ms = 60000

[aliases."${ALIAS}"]
targets = [{ upstream = "hostile", model = "hm" }]
`,
  )

const chat = (url: string, key: string, content: string, extra: Record<string, unknown> = {}, signal?: AbortSignal) =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: ALIAS, messages: [{ role: 'user', content }], ...extra }),
    signal,
  })

interface ErrorBody {
  error: { type: string; code: string; message: string }
}

/** Runs `body` against a fresh gateway and hostile upstream, then stops both. */
async function withHostileGateway(
  body: (gateway: GatewayProcess, upstream: ReturnType<typeof hostileUpstream>) => Promise<void>,
  env: Record<string, string> = {},
) {
  using dir = tempDir()
  const upstream = hostileUpstream()
  const gateway = await spawnGateway(
    { GATEWAY_DB: `${dir.path}/gateway.sqlite`, GATEWAY_CONFIG: gatewayConfig(dir.path, upstream.url), ...env },
    { expectFirstKey: true },
  )
  try {
    // Warm up both paths once, so start-up allocations are not counted as growth.
    for (const stream of [false, true]) {
      const response = await chat(gateway.url, gateway.firstKey!, 'warm-up', { stream })
      expect(response.status).toBe(200)
      await response.text()
    }
    await body(gateway, upstream)
    expect((await fetch(`${gateway.url}/health`)).status).toBe(200)
  } finally {
    upstream.stop()
    await gateway.stop()
  }
}

/** Waits until the upstream stopped writing `record` (the gateway hung up, or it all went out). */
const upstreamDone = (record: Served | undefined) =>
  waitFor(() => record !== undefined && (record.aborted || record.finished), `the upstream to stop writing ${record?.mode ?? 'a request it never got'}`)

describe('an upstream SSE event that never ends', () => {
  // One event is capped at 1 MiB (GATEWAY_MAX_SSE_EVENT_BYTES); without the cap the buffer grew by
  // the whole stream, to a gigabyte. 150 MB leaves room for a busy machine and a late collection.
  const RSS_LIMIT_MB = 150

  test('before the first byte: a failed attempt, 502 upstream_invalid_response, memory bounded', async () => {
    await withHostileGateway(async (gateway, upstream) => {
      const client = new AbortController()
      const rss = watchRss(gateway.proc.pid, RSS_LIMIT_MB, () => client.abort())
      try {
        const response = await chat(gateway.url, gateway.firstKey!, 'endless-event', { stream: true }, client.signal)
        expect(response.status).toBe(502)
        const { error } = (await response.json()) as ErrorBody
        expect(error.type).toBe('upstream_error')
        expect(error.code).toBe('upstream_invalid_response')
        expect(error.message).toContain('"hostile"')
      } catch (error) {
        if (!client.signal.aborted) throw error
      } finally {
        rss.stop()
      }
      expect(rss.growth()).toBeLessThan(RSS_LIMIT_MB)
      // The gateway stopped reading at the cap and hung up: the upstream never got to write its whole body.
      const served = upstream.served.find((s) => s.mode === 'endless-event')
      expect(await upstreamDone(served)).toBe(true)
      expect(served).toMatchObject({ aborted: true, finished: false })
    })
  })

  test('after a first chunk: the stream ends with an error event and no [DONE], memory bounded', async () => {
    await withHostileGateway(async (gateway, upstream) => {
      const client = new AbortController()
      const rss = watchRss(gateway.proc.pid, RSS_LIMIT_MB, () => client.abort())
      let text = ''
      try {
        const response = await chat(gateway.url, gateway.firstKey!, 'chunk-then-endless-event', { stream: true }, client.signal)
        expect(response.status).toBe(200)
        expect(response.headers.get('content-type')).toContain('text/event-stream')
        text = await response.text()
      } catch (error) {
        if (!client.signal.aborted) throw error
      } finally {
        rss.stop()
      }
      expect(rss.growth()).toBeLessThan(RSS_LIMIT_MB)
      const events = text.split('\n\n').filter((event) => event !== '')
      expect(events.length).toBe(2)
      expect(JSON.parse(events[0]!.slice('data: '.length)).choices[0].delta.content).toBe('first words')
      expect(events[1]!.startsWith('data: ')).toBe(true)
      const { error } = JSON.parse(events[1]!.slice('data: '.length)) as ErrorBody
      expect(error.type).toBe('upstream_error')
      expect(error.code).toBe('upstream_invalid_response')
      expect(text).not.toContain('[DONE]')
      const served = upstream.served.find((s) => s.mode === 'chunk-then-endless-event')
      expect(await upstreamDone(served)).toBe(true)
      expect(served).toMatchObject({ aborted: true, finished: false })
    })
  })
})

describe('an upstream JSON answer far too large', () => {
  // Bodies are capped at 32 MiB (GATEWAY_MAX_UPSTREAM_BODY_BYTES): these six cost some 200 MB at
  // their peak (each chunked one holds up to the cap; the runtime buffers part of each refused one
  // before it is cancelled). Read whole, they cost 1.7 GB, about 300 MB each.
  const RSS_LIMIT_MB = 600

  test('100 MB, three at once with a content-length and three chunked: 502 upstream_invalid_response, memory bounded', async () => {
    await withHostileGateway(async (gateway, upstream) => {
      const client = new AbortController()
      const rss = watchRss(gateway.proc.pid, RSS_LIMIT_MB, () => client.abort())
      const modes = ['huge-json-length', 'huge-json-chunked']
      let results: { mode: string; status: number; body: ErrorBody }[] = []
      try {
        results = await Promise.all(
          modes.flatMap((mode) =>
            Array.from({ length: 3 }, async () => {
              const response = await chat(gateway.url, gateway.firstKey!, mode, {}, client.signal)
              return { mode, status: response.status, body: (await response.json()) as ErrorBody }
            }),
          ),
        )
      } catch (error) {
        if (!client.signal.aborted) throw error
      } finally {
        rss.stop()
      }
      expect(rss.growth()).toBeLessThan(RSS_LIMIT_MB)
      expect(results.map((r) => `${r.mode} ${r.status} ${r.body.error?.code}`)).toEqual(
        modes.flatMap((mode) => Array<string>(3).fill(`${mode} 502 upstream_invalid_response`)),
      )
      for (const { body } of results) expect(body.error.type).toBe('upstream_error')
      // The gateway stopped reading each body early: none was written to its end.
      const huge = upstream.served.filter((s) => s.mode.startsWith('huge-json'))
      expect(huge.length).toBe(6)
      for (const record of huge) {
        expect(await upstreamDone(record)).toBe(true)
        expect(record.finished).toBe(false)
      }
    })
  })
})

/** A gateway whose process may hold at most `fdLimit` file descriptors, on a free port. */
async function spawnGatewayWithFdLimit(fdLimit: number, env: Record<string, string>) {
  const proc: Subprocess<'ignore', 'pipe', 'pipe'> = Bun.spawn(['sh', '-c', `ulimit -n ${fdLimit} && exec bun ${temporaryBuild('main')}`], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  let text = ''
  const decoder = new TextDecoder()
  void (async () => {
    for await (const chunk of proc.stderr) text += decoder.decode(chunk)
  })()
  // Drained to the end, so the child never blocks on a full pipe.
  void (async () => {
    for await (const chunk of proc.stdout) text += decoder.decode(chunk)
  })()
  const listening = () => /listening on (http:\/\/[^"\s]+)/.exec(text)?.[1]
  await waitFor(
    () => listening() !== undefined || proc.exitCode !== null,
    () => `the gateway's "listening on" line; its output so far:\n${text}`,
  )
  const url = listening()
  if (url === undefined) throw new Error(`gateway exited before listening:\n${text}`)
  return {
    proc,
    url,
    output: () => text,
    async stop() {
      proc.kill('SIGTERM')
      if ((await Promise.race([proc.exited, Bun.sleep(10_000).then(() => null)])) === null) proc.kill('SIGKILL')
      await proc.exited
    },
  }
}

describe('idle keep-alive connections', () => {
  test('with as many idle connections as its file descriptors allow, a new client still gets its answer', async () => {
    const FD_LIMIT = 2200
    const hard = /^Max open files\s+\d+\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1]
    // Bun raises its own soft limit to the hard one; this process holds every idle connection.
    expect(hard === 'unlimited' || Number(hard) >= FD_LIMIT + 500).toBe(true)
    using dir = tempDir()
    const gateway = await spawnGatewayWithFdLimit(FD_LIMIT, { GATEWAY_DB: `${dir.path}/gateway.sqlite`, GATEWAY_IDLE_TIMEOUT_S: '2' })
    const port = Number(new URL(gateway.url).port)
    const sockets: Socket[] = []
    let answered = 0
    let closed = 0
    try {
      // As many keep-alive connections as the gateway has descriptors (it uses some itself, so the
      // last ones wait in the listen backlog): each asks once, then stays open saying nothing.
      const opened = await Promise.all(
        Array.from({ length: FD_LIMIT }, () =>
          Bun.connect({
            hostname: '127.0.0.1',
            port,
            socket: {
              open: (socket) => void socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'),
              data: (_socket, data) => void (data.toString('latin1').startsWith('HTTP/1.1 200') && answered++),
              close: () => void closed++,
              error: () => {},
            },
          }),
        ),
      )
      sockets.push(...opened)
      // Really held: at least 2,000 connections were answered and are now idle.
      await waitFor(
        () => answered >= 2_000,
        () => `2,000 idle connections answered (${answered} so far)`,
      )

      // A new client: its connection waits until the gateway can accept it, and it may be reset on
      // the way; it asks again until it gets an answer.
      const status = await waitFor(
        async () => {
          try {
            const response = await fetch(`http://127.0.0.1:${port}/health`, { keepalive: false })
            await response.text()
            return response.status === 200 && response.status
          } catch {
            return false
          }
        },
        'a new client to get an answer from /health while every descriptor is held',
        { intervalMs: 50 },
      )
      expect(status).toBe(200)
      // The gateway closed idle connections to make room.
      expect(closed).toBeGreaterThan(0)
    } finally {
      for (const socket of sockets) socket.end()
      await gateway.stop()
    }
  })
})

describe('a transport error names the upstream, never its URL', () => {
  test('refused, and a body that fails to decode: 502 naming the upstream with no URL, port or token; logs and /admin/upstreams redact it; the query string reaches the upstream', async () => {
    // Regression: a port freed by a closed listener was handed to the garbled upstream below, so "refused" was answered.
    const closedPort = await refusingPort()
    // An upstream whose body claims gzip and is not: the runtime's error for it quotes the whole URL.
    const reached: string[] = []
    const garbled = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: (req) => {
        const url = new URL(req.url)
        reached.push(url.pathname + url.search)
        return new Response('this is not gzip', { headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } })
      },
    })
    const codes: Record<string, string> = { refused: 'upstream_connection_error', garbled: 'upstream_invalid_response' }
    using dir = tempDir()
    const upstreams = { refused: closedPort, garbled: garbled.port }
    const config = writeConfig(
      dir.path,
      `
[tiers.main]
requests_per_minute = 100000
tokens_per_minute = 1000000000
max_concurrent = 64
${Object.entries(upstreams)
  .map(
    ([name, port]) => `
[upstreams.${name}]
kind = "openai"
base_url = "http://127.0.0.1:${port}/v1?token=s3cr3t-token"
max_retries = 0

[aliases."${name}/model"]
targets = [{ upstream = "${name}", model = "m" }]
`,
  )
  .join('')}`,
    )
    const gateway = await spawnGateway(
      { GATEWAY_DB: `${dir.path}/gateway.sqlite`, GATEWAY_CONFIG: config, GATEWAY_ADMIN_KEY: ADMIN_KEY },
      { expectFirstKey: true },
    )
    try {
      for (const [name, port] of Object.entries(upstreams)) {
        const response = await fetch(`${gateway.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${gateway.firstKey}` },
          body: JSON.stringify({ model: `${name}/model`, messages: [{ role: 'user', content: 'hello' }] }),
        })
        expect(`${name} ${response.status}`).toBe(`${name} 502`)
        const text = await response.text()
        const { error } = JSON.parse(text) as ErrorBody
        expect(error.type).toBe('upstream_error')
        expect(`${name}: ${error.code}`).toBe(`${name}: ${codes[name]}`)
        expect(error.message).toContain(`"${name}"`)
        for (const secret of ['s3cr3t-token', 'token=', '127.0.0.1', String(port), 'http://']) expect(`${name}: ${text}`).not.toContain(secret)
      }

      // The endpoint's path goes after the base URL's path, and its query string stays a query string.
      expect(reached).toEqual(['/v1/chat/completions?token=s3cr3t-token'])

      const listing = await fetch(`${gateway.url}/admin/upstreams`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } })
      expect(listing.status).toBe(200)
      const text = await listing.text()
      expect(text).not.toContain('s3cr3t-token')
      const { data } = JSON.parse(text) as { data: { name: string; base_url: string | null }[] }
      for (const [name, port] of Object.entries(upstreams)) {
        expect(data.find((u) => u.name === name)?.base_url).toBe(`http://127.0.0.1:${port}/v1?token=***`)
      }

      // Both failed attempts are logged (a warning naming the upstream), without the token.
      const failures = () => gateway.output().match(/upstream attempt failed/g)?.length ?? 0
      await waitFor(
        () => failures() >= 2,
        () => `both failed attempts logged; the output so far:\n${gateway.output()}`,
      )
      expect(gateway.output()).not.toContain('s3cr3t-token')
    } finally {
      garbled.stop(true)
      await gateway.stop()
    }
    expect(gateway.output()).not.toContain('s3cr3t-token')
  })
})
