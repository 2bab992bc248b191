/**
 * The floor: a bare Bun fetch pass-through proxy, no auth, limits, accounting or routing.
 * Usage: bun bench/bare-proxy.ts <port> <upstream base url>
 */
const port = Number(process.argv[2] ?? 0)
const upstream = process.argv[3] ?? 'http://127.0.0.1:9000'

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
    return new Response(response.body, { status: response.status, headers: { 'content-type': response.headers.get('content-type') ?? 'application/json' } })
  },
})
console.log(`bare proxy on http://127.0.0.1:${server.port}`)
export {}
