/**
 * An OpenAI-compatible mock whose every stream lasts a while: one delta a second for `seconds`, then
 * the usage chunk and [DONE], like a long completion. For the "many long streams" scenario.
 * Usage: bun bench/slow-upstream.ts [port] [seconds]
 */
const port = Number(process.argv[2] ?? 0)
const seconds = Number(process.argv[3] ?? 10)

const encoder = new TextEncoder()
const event = (data: object) =>
  encoder.encode(`data: ${JSON.stringify({ id: 'chatcmpl-long', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'bench-model', ...data })}\n\n`)
const first = event({ choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] })
const delta = event({ choices: [{ index: 0, delta: { content: ' word' }, finish_reason: null }] })
const last = new Uint8Array([
  ...event({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }),
  ...event({ choices: [], usage: { prompt_tokens: 12, completion_tokens: seconds, total_tokens: 12 + seconds } }),
  ...encoder.encode('data: [DONE]\n\n'),
])

interface Open {
  controller: ReadableStreamDefaultController<Uint8Array>
  ticks: number
}
/** One timer for every stream, rather than one each: thousands of streams are open at once. */
const open = new Set<Open>()
setInterval(() => {
  for (const stream of open) {
    try {
      if (++stream.ticks < seconds) {
        stream.controller.enqueue(delta)
        continue
      }
      stream.controller.enqueue(last)
      stream.controller.close()
    } catch {
      // The gateway hung up: nothing more to send.
    }
    open.delete(stream)
  }
}, 1000)

const server = Bun.serve({
  hostname: '127.0.0.1',
  port,
  idleTimeout: 30,
  async fetch(req) {
    if (req.method !== 'POST') return new Response('slow upstream')
    await req.text()
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(first)
        open.add({ controller, ticks: 0 })
      },
      cancel() {
        // Removed at its next tick, when its enqueue throws.
      },
    })
    return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
  },
})
console.log(`slow upstream on http://127.0.0.1:${server.port}, streams of ${seconds} s`)
export {}
