/**
 * A fast fake Gemini API for benchmarks: `:generateContent` JSON and `:streamGenerateContent?alt=sse`
 * (each event a partial GenerateContentResponse, the last with the finish reason and the usage, as
 * https://ai.google.dev/api/generate-content describes them), built once at start, with an optional
 * delay. The key and the model in the path are not checked (the tests do that).
 * Usage: bun bench/mock-gemini.ts [port] [delayMs]
 *
 * The lead wires it into `bun run bench` as an upstream of kind "gemini" (base_url = this server's
 * `/v1beta`, any api_key_env that is set), beside the openai kind's mock, so the overhead of the
 * translation to and from the pivot shows side by side: the same ten words, the same usage.
 */
const port = Number(process.argv[2] ?? 0)
const delayMs = Number(process.argv[3] ?? 0)

const words = ['The', ' quick', ' brown', ' fox', ' jumps', ' over', ' the', ' lazy', ' dog', '.']
const usageMetadata = { promptTokenCount: 12, candidatesTokenCount: 10, totalTokenCount: 22 }
const base = { modelVersion: 'gemini-bench', responseId: 'bench-response' }

const answer = JSON.stringify({
  candidates: [{ content: { role: 'model', parts: [{ text: words.join('') }] }, finishReason: 'STOP', index: 0 }],
  usageMetadata,
  ...base,
})
const event = (data: object) => `data: ${JSON.stringify(data)}\r\n\r\n`
const stream =
  words
    .map((text) =>
      event({
        candidates: [{ content: { role: 'model', parts: [{ text }] }, index: 0 }],
        usageMetadata: { promptTokenCount: 12, totalTokenCount: 12 },
        ...base,
      }),
    )
    .join('') + event({ candidates: [{ content: { role: 'model', parts: [{ text: '' }] }, finishReason: 'STOP', index: 0 }], usageMetadata, ...base })

const jsonHeaders = { 'content-type': 'application/json; charset=UTF-8' }
const sseHeaders = { 'content-type': 'text/event-stream' }

const server = Bun.serve({
  hostname: '127.0.0.1',
  port,
  async fetch(req) {
    await req.arrayBuffer()
    if (delayMs > 0) await Bun.sleep(delayMs)
    const path = new URL(req.url).pathname
    if (path.endsWith(':streamGenerateContent')) return new Response(stream, { headers: sseHeaders })
    if (path.endsWith(':countTokens')) return new Response('{"totalTokens":12}', { headers: jsonHeaders })
    return new Response(answer, { headers: jsonHeaders })
  },
})
console.log(`mock gemini on http://127.0.0.1:${server.port}/v1beta`)
export {}
