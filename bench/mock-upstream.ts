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

/** OpenAI's Responses API (native targets): a Response, and its event stream (https://platform.openai.com/docs/api-reference/responses-streaming). */
const responseObject = (status: string, output: unknown[], usage: unknown) => ({
  id: 'resp_bench',
  object: 'response',
  created_at: 1_700_000_000,
  status,
  error: null,
  incomplete_details: null,
  instructions: null,
  model: 'bench-model',
  output,
  parallel_tool_calls: true,
  metadata: {},
  tool_choice: 'auto',
  tools: [],
  temperature: null,
  top_p: null,
  usage,
})
const words = ['The', ' quick', ' brown', ' fox', ' jumps', ' over', ' the', ' lazy', ' dog', '.']
const text = words.join('')
const message = {
  type: 'message',
  id: 'msg_bench',
  status: 'completed',
  role: 'assistant',
  content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
}
const responseUsage = {
  input_tokens: 12,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 10,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 22,
}
const response = JSON.stringify(responseObject('completed', [message], responseUsage))
let sequence = 0
const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data, sequence_number: sequence++ })}\n\n`
const responseStream = [
  event('response.created', { response: responseObject('in_progress', [], null) }),
  event('response.in_progress', { response: responseObject('in_progress', [], null) }),
  event('response.output_item.added', { output_index: 0, item: { ...message, status: 'in_progress', content: [] } }),
  event('response.content_part.added', {
    item_id: 'msg_bench',
    output_index: 0,
    content_index: 0,
    part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
  }),
  ...words.map((delta) => event('response.output_text.delta', { item_id: 'msg_bench', output_index: 0, content_index: 0, delta, logprobs: [] })),
  event('response.output_text.done', { item_id: 'msg_bench', output_index: 0, content_index: 0, text, logprobs: [] }),
  event('response.content_part.done', { item_id: 'msg_bench', output_index: 0, content_index: 0, part: message.content[0] }),
  event('response.output_item.done', { output_index: 0, item: message }),
  event('response.completed', { response: JSON.parse(response) }),
].join('')

const jsonHeaders = { 'content-type': 'application/json' }
const sseHeaders = { 'content-type': 'text/event-stream' }

const server = Bun.serve({
  hostname: '127.0.0.1',
  port,
  async fetch(req) {
    const body = await req.text()
    if (delayMs > 0) await Bun.sleep(delayMs)
    const streamed = body.includes('"stream":true')
    if (req.url.endsWith('/responses'))
      return streamed ? new Response(responseStream, { headers: sseHeaders }) : new Response(response, { headers: jsonHeaders })
    return streamed ? new Response(stream, { headers: sseHeaders }) : new Response(completion, { headers: jsonHeaders })
  },
})
console.log(`mock upstream on http://127.0.0.1:${server.port}`)
export {}
