/**
 * A fast OpenAI-compatible mock upstream for benchmarks: JSON and SSE answers built once, with an
 * optional delay. Usage: bun bench/mock-upstream.ts [port] [delayMs]
 */
const port = Number(process.argv[2] ?? 0)
const delayMs = Number(process.argv[3] ?? 0)

const completion = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'bench-model',
  choices: [{ index: 0, message: { role: 'assistant', content: 'The quick brown fox jumps over the lazy dog.' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 12, completion_tokens: 10, total_tokens: 22 },
})
const chunk = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'bench-model', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
const stream =
  chunk({ role: 'assistant', content: '' }) +
  ['The', ' quick', ' brown', ' fox', ' jumps', ' over', ' the', ' lazy', ' dog', '.'].map((w) => chunk({ content: w })).join('') +
  chunk({}, 'stop') +
  `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'bench-model', choices: [], usage: { prompt_tokens: 12, completion_tokens: 10, total_tokens: 22 } })}\n\n` +
  'data: [DONE]\n\n'

const jsonHeaders = { 'content-type': 'application/json' }
const sseHeaders = { 'content-type': 'text/event-stream' }

const server = Bun.serve({
  hostname: '127.0.0.1',
  port,
  async fetch(req) {
    const body = await req.text()
    if (delayMs > 0) await Bun.sleep(delayMs)
    return body.includes('"stream":true') ? new Response(stream, { headers: sseHeaders }) : new Response(completion, { headers: jsonHeaders })
  },
})
console.log(`mock upstream on http://127.0.0.1:${server.port}`)
export {}
