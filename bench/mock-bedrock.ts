/**
 * A fast fake Bedrock runtime for benchmarks: ConverseStream in the binary event-stream framing
 * (prelude, headers, payload, both CRC32s: encoded once, at start) and Converse JSON, with an
 * optional delay. Signatures are not checked (the tests do that); the model id in the path is
 * ignored. Usage: bun bench/mock-bedrock.ts [port] [delayMs]
 *
 * The lead wires it into `bun run bench` as an upstream of kind "bedrock" (any region, any
 * access_key_id_env / secret_access_key_env that are set, base_url = this server), beside the
 * openai kind's mock, so the overhead of SigV4 signing and event-stream decoding shows side by side.
 */
import { crc32 } from 'node:zlib'

const port = Number(process.argv[2] ?? 0)
const delayMs = Number(process.argv[3] ?? 0)

const words = ['The', ' quick', ' brown', ' fox', ' jumps', ' over', ' the', ' lazy', ' dog', '.']
const usage = { inputTokens: 12, outputTokens: 10, totalTokens: 22 }

/** One string header: name length, name, type 7 (string), value length, value. */
function header(name: string, value: string): Buffer {
  const n = Buffer.from(name)
  const v = Buffer.from(value)
  const out = Buffer.alloc(4 + n.length + v.length)
  out.writeUInt8(n.length, 0)
  n.copy(out, 1)
  out.writeUInt8(7, 1 + n.length)
  out.writeUInt16BE(v.length, 2 + n.length)
  v.copy(out, 4 + n.length)
  return out
}

/** One event message, as AWS's event-stream encoding lays it out. */
function event(type: string, payload: object): Buffer {
  const headers = Buffer.concat([header(':event-type', type), header(':content-type', 'application/json'), header(':message-type', 'event')])
  const body = Buffer.from(JSON.stringify({ ...payload, p: 'abcdefghijklmnopqrstuvwxyz' }))
  const total = 16 + headers.length + body.length
  const out = Buffer.alloc(total)
  out.writeUInt32BE(total, 0)
  out.writeUInt32BE(headers.length, 4)
  out.writeUInt32BE(crc32(out.subarray(0, 8)), 8)
  headers.copy(out, 12)
  body.copy(out, 12 + headers.length)
  out.writeUInt32BE(crc32(out.subarray(0, total - 4)), total - 4)
  return out
}

const stream = Buffer.concat([
  event('messageStart', { role: 'assistant' }),
  ...words.map((text) => event('contentBlockDelta', { contentBlockIndex: 0, delta: { text } })),
  event('contentBlockStop', { contentBlockIndex: 0 }),
  event('messageStop', { stopReason: 'end_turn' }),
  event('metadata', { usage, metrics: { latencyMs: 1 } }),
])
const converse = JSON.stringify({
  output: { message: { role: 'assistant', content: [{ text: words.join('') }] } },
  stopReason: 'end_turn',
  usage,
  metrics: { latencyMs: 1 },
})

const streamHeaders = { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-requestid': 'bench' }
const jsonHeaders = { 'content-type': 'application/json', 'x-amzn-requestid': 'bench' }

const server = Bun.serve({
  hostname: '127.0.0.1',
  port,
  async fetch(req) {
    await req.arrayBuffer()
    if (delayMs > 0) await Bun.sleep(delayMs)
    return req.url.endsWith('/converse-stream') ? new Response(stream, { headers: streamHeaders }) : new Response(converse, { headers: jsonHeaders })
  },
})
console.log(`mock bedrock on http://127.0.0.1:${server.port}`)
export {}
