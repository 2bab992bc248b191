// An OpenAI-compatible chat completions mock on Node's http server: the upstream of the sequential
// scenario, as the independent gateway benchmark it follows uses one. Usage: node bench/node-mock.mjs <port>
import { createServer } from 'node:http'

const answer = JSON.stringify({
  id: 'chatcmpl-node',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'bench-model',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Foxes are quick.' }, finish_reason: 'stop', logprobs: null }],
  usage: { prompt_tokens: 12, completion_tokens: 10, total_tokens: 22 },
})

createServer((request, response) => {
  request.resume()
  request.on('end', () => {
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) })
    response.end(answer)
  })
}).listen(Number(process.argv[2]), '127.0.0.1')
