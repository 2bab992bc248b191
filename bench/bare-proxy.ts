/**
 * The floor: a bare Bun fetch pass-through proxy, no auth, limits, accounting or routing.
 * Usage: bun bench/bare-proxy.ts <port> <upstream base url> [relay]
 *
 * With `relay`, the response body passes through JavaScript unchanged: a JSON body is read whole
 * and sent on, an event stream is read chunk by chunk and written out again. That is the floor for
 * any proxy that must look at the bytes (to rewrite the model, count usage or notice a stream that
 * broke), as a gateway must. Without it, Bun pipes the upstream body to the client natively and
 * JavaScript never touches it.
 */
const port = Number(process.argv[2] ?? 0)
const upstream = process.argv[3] ?? 'http://127.0.0.1:9000'
const relay = process.argv[4] === 'relay'

function relayed(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = body.getReader()
  return new ReadableStream({
    async pull(controller) {
      const { value, done } = await reader.read()
      if (done) controller.close()
      else controller.enqueue(value)
    },
  })
}

const server = Bun.serve({
  hostname: '127.0.0.1',
  port,
  async fetch(req) {
    const url = new URL(req.url)
    const response = await fetch(upstream + url.pathname, {
      method: req.method,
      headers: { 'content-type': 'application/json', authorization: req.headers.get('authorization') ?? '' },
      body: await req.arrayBuffer(),
    })
    const type = response.headers.get('content-type') ?? 'application/json'
    const body = !relay || !response.body ? response.body : type.includes('event-stream') ? relayed(response.body) : await response.text()
    return new Response(body, { status: response.status, headers: { 'content-type': type } })
  },
})
console.log(`bare proxy${relay ? ' (JS relay)' : ''} on http://127.0.0.1:${server.port}`)
export {}
