import type { Server } from 'bun'

export interface RecordedRequest {
  path: string
  headers: Headers
  body: Record<string, unknown>
  /** The body exactly as it arrived. */
  text: string
}

export interface FakeUpstream {
  server: Server<undefined>
  url: string
  requests: RecordedRequest[]
  stop(): void
}

/** A real OpenAI-compatible HTTP server on 127.0.0.1, answering with `handle`. Records every request. */
export function fakeUpstream(handle: (request: RecordedRequest) => Response | Promise<Response>): FakeUpstream {
  const requests: RecordedRequest[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const text = await req.text()
      const recorded: RecordedRequest = { path: new URL(req.url).pathname, headers: req.headers, body: JSON.parse(text) as Record<string, unknown>, text }
      requests.push(recorded)
      return handle(recorded)
    },
  })
  return { server, url: `http://127.0.0.1:${server.port}/v1`, requests, stop: () => void server.stop(true) }
}

/** An OpenAI chat.completion answering `content`, with the given usage. */
export function openaiCompletion(model: string, content: string, usage = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 }) {
  return Response.json({
    id: 'chatcmpl-upstream-1',
    object: 'chat.completion',
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage,
  })
}

/** An OpenAI SSE stream of `pieces`, a usage chunk (the gateway always asks for it), then [DONE]. */
export function openaiStream(model: string, pieces: string[], usage = { prompt_tokens: 5, completion_tokens: pieces.length, total_tokens: 5 + pieces.length }) {
  const base = { id: 'chatcmpl-upstream-2', object: 'chat.completion.chunk', created: 1_700_000_000, model }
  const events = [
    { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }], usage: null },
    ...pieces.map((content) => ({ ...base, choices: [{ index: 0, delta: { content }, finish_reason: null }], usage: null })),
    { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: null },
    { ...base, choices: [], usage },
  ]
  const body = events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n'
  return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
}
