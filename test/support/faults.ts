import type { Server } from 'bun'

/**
 * A fault-injecting OpenAI-compatible upstream on a real socket. The mode comes from the last
 * message's content, `mode[:arg][#tag]`, e.g. `reset-stream:3#t1`, `flaky:2#t7`, `slow-first-byte:400`.
 * Requests are counted by full content, so a test can tell how many attempts reached it.
 */
export interface FaultServer {
  server: Server<undefined>
  url: string
  /** Attempts seen per message content. */
  hits: Map<string, number>
  /** Contents of requests whose connection the gateway aborted. */
  aborted: string[]
  /** The last request body the fault server received. */
  lastBody(): Record<string, unknown> | undefined
  stop(): void
}

const encoder = new TextEncoder()

const completion = (model: string, content: string) => ({
  id: 'chatcmpl-fault',
  object: 'chat.completion',
  created: 1_700_000_000,
  model,
  choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
})

const chunk = (model: string, content: string) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-fault', object: 'chat.completion.chunk', created: 1_700_000_000, model, choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`

const usageChunk = (model: string, completionTokens: number) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-fault', object: 'chat.completion.chunk', created: 1_700_000_000, model, choices: [], usage: { prompt_tokens: 10, completion_tokens: completionTokens, total_tokens: 10 + completionTokens } })}\n\n`

/**
 * How long the connection stays open after the last part, before the cut. Bun cuts a body by
 * resetting the connection, and a reset throws away whatever the peer had received but not read
 * yet: cut at once, and a peer that was not scheduled in time (the gateway shares this process,
 * and CI runs the suite beside two CPU hogs) never sees the parts, so the fault would be "cut before
 * the first byte" instead of the one asked for. This is the fault's shape, not a wait of the test.
 */
const LINGER_BEFORE_CUT_MS = 100

/** A body that sends `parts` (with a pause after each) and then drops the connection mid-body. */
function cutBody(parts: string[], pauseMs = 5): ReadableStream<Uint8Array> {
  return new ReadableStream({
    async pull(controller) {
      for (const part of parts) {
        controller.enqueue(encoder.encode(part))
        await Bun.sleep(pauseMs)
      }
      await Bun.sleep(LINGER_BEFORE_CUT_MS)
      controller.error(new Error('fault server: connection cut on purpose'))
    },
  })
}

function whenAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })))
}

export function faultServer(): FaultServer {
  const hits = new Map<string, number>()
  const aborted: string[] = []
  let last: Record<string, unknown> | undefined
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 30,
    async fetch(req) {
      const body = (await req.json()) as { model: string; stream?: boolean; messages: { content: string }[] }
      last = body
      const content = body.messages.at(-1)!.content
      const hit = (hits.get(content) ?? 0) + 1
      hits.set(content, hit)
      req.signal.addEventListener('abort', () => aborted.push(content), { once: true })
      const [mode = '', arg = ''] = content.split('#')[0]!.split(':')
      const n = Number(arg)
      const model = body.model
      const stream = body.stream === true
      const ok = () =>
        stream
          ? new Response(chunk(model, 'fine') + usageChunk(model, 1) + 'data: [DONE]\n\n', { headers: { 'content-type': 'text/event-stream' } })
          : Response.json(completion(model, 'fine'))

      switch (mode) {
        case '500':
          return Response.json({ error: { message: 'internal failure', type: 'server_error' } }, { status: 500 })
        case '503-html':
          return new Response('<html><body><h1>503 Service Unavailable</h1><p>nginx</p></body></html>', {
            status: 503,
            headers: { 'content-type': 'text/html' },
          })
        case 'html':
          return new Response('<html><body>Welcome to nginx!</body></html>', { status: 200, headers: { 'content-type': 'text/html' } })
        case '429':
          return Response.json(
            { error: { message: 'slow down', type: 'rate_limit_error' } },
            { status: 429, headers: { 'retry-after-ms': String(n || 50), 'retry-after': '1' } },
          )
        case '400':
          return Response.json({ error: { message: 'context_length_exceeded: too many tokens', type: 'invalid_request_error' } }, { status: 400 })
        case '401':
          return Response.json({ error: { message: 'Incorrect API key provided: sk-upstr****' } }, { status: 401 })
        case '403':
          // OpenAI's answer to a key without access to the model, or from a region it does not serve.
          return Response.json(
            { error: { message: 'Country, region, or territory not supported', type: 'request_forbidden', code: 'unsupported_country_region_territory' } },
            { status: 403 },
          )
        case 'invalid-json':
          return new Response('{"id":"x","choices":[{', { headers: { 'content-type': 'application/json' } })
        case 'wrong-content-type':
          return new Response(JSON.stringify(completion(model, 'fine')), { headers: { 'content-type': 'text/plain' } })
        case 'hang':
          await whenAborted(req.signal)
          return new Response(null, { status: 499 })
        case 'slow-first-byte':
          await Bun.sleep(n)
          return ok()
        case 'drip': {
          // Headers at once, then one piece every `n` ms: never done within a short timeout.
          const pieces = Array.from({ length: 50 }, (_, i) => (stream ? chunk(model, `p${i} `) : ' '))
          const dripped = new ReadableStream<Uint8Array>({
            async pull(controller) {
              for (const piece of pieces) {
                if (req.signal.aborted) return controller.close()
                controller.enqueue(encoder.encode(piece))
                await Bun.sleep(n)
              }
              controller.close()
            },
          })
          return new Response(dripped, { headers: { 'content-type': stream ? 'text/event-stream' : 'application/json' } })
        }
        case 'reset-body':
          return new Response(cutBody(['{"id":"chatcmpl-fault","object":"chat.co']), { headers: { 'content-type': 'application/json' } })
        case 'reset-stream':
          return new Response(cutBody(Array.from({ length: n }, (_, i) => chunk(model, `c${i} `))), { headers: { 'content-type': 'text/event-stream' } })
        case 'hold-stream': {
          // One chunk, then nothing until the gateway goes away.
          const held = new ReadableStream<Uint8Array>({
            async start(controller) {
              controller.enqueue(encoder.encode(chunk(model, 'first ')))
              await whenAborted(req.signal)
              controller.close()
            },
          })
          return new Response(held, { headers: { 'content-type': 'text/event-stream' } })
        }
        case 'flaky':
          // Fails the first `n` attempts of this content, then answers.
          return hit <= n ? Response.json({ error: { message: `flaky failure ${hit}` } }, { status: 502 }) : ok()
        default:
          return ok()
      }
    },
  })
  return {
    server,
    url: `http://127.0.0.1:${server.port}/v1`,
    hits,
    aborted,
    lastBody: () => last,
    stop: () => void server.stop(true),
  }
}
