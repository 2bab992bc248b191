/**
 * An OpenAI-compatible upstream that fails as a request's text asks, on chat completions and
 * embeddings alike (a marker anywhere in the body): `[[400]]` OpenAI's context-length 400 with its
 * own param and code, `[[400-null]]` a 400 with both null, `[[422]]`, `[[429]]`, `[[500]]`,
 * `[[hang]]` (no answer until the gateway gives up), `[[cut]]` (a stream that breaks after its first
 * chunk). Error bodies as OpenAI writes them: https://platform.openai.com/docs/guides/error-codes.
 * Anything else is answered normally.
 */
import { recordingServer, sseResponse } from '../support/fakes/common'

/** OpenAI's answer to a conversation longer than the model's context, as its API writes it. */
export const UPSTREAM_400 = {
  message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
  param: 'messages',
  code: 'context_length_exceeded',
}

export interface Faulty {
  url: string
  stop(): void
}

const error = (status: number, type: string, message: string, param: string | null = null, code: string | null = null) =>
  Response.json({ error: { message, type, param, code } }, { status })

const chunk = (model: string, delta: Record<string, unknown>, finish: string | null = null) => ({
  id: 'chatcmpl-faulty',
  object: 'chat.completion.chunk',
  created: 1_700_000_000,
  model,
  choices: [{ index: 0, delta, finish_reason: finish }],
})

function answer(path: string, body: any): Response {
  if (path.endsWith('/embeddings')) {
    const inputs: string[] = typeof body.input === 'string' ? [body.input] : body.input
    const data = inputs.map((_, index) => ({ object: 'embedding', index, embedding: [0.25, -0.5, 0.75] }))
    return Response.json({ object: 'list', data, model: body.model, usage: { prompt_tokens: 1, total_tokens: 1 } })
  }
  if (body.stream === true)
    return sseResponse([
      { data: chunk(body.model, { role: 'assistant', content: 'fine' }) },
      { data: chunk(body.model, {}, 'stop') },
      { data: { ...chunk(body.model, {}), choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } } },
      { data: '[DONE]' },
    ])
  return Response.json({
    id: 'chatcmpl-faulty',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: body.model,
    choices: [{ index: 0, message: { role: 'assistant', content: 'fine', refusal: null }, finish_reason: 'stop', logprobs: null }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  })
}

/** A stream whose second event is not JSON: the gateway has sent its first byte, so it ends the stream with an error event. */
const cutStream = (model: string) =>
  new Response(`data: ${JSON.stringify(chunk(model, { role: 'assistant', content: 'partial' }))}\n\ndata: {"id": "chatcmpl-faulty", "choi\n\n`, {
    headers: { 'content-type': 'text/event-stream' },
  })

export function faultyUpstream(): Faulty {
  const server = recordingServer(async (call) => {
    const text = call.text
    if (text.includes('[[400]]')) return error(400, 'invalid_request_error', UPSTREAM_400.message, UPSTREAM_400.param, UPSTREAM_400.code)
    if (text.includes('[[400-null]]')) return error(400, 'invalid_request_error', 'Invalid value for a parameter.')
    if (text.includes('[[422]]')) return error(422, 'invalid_request_error', 'The request could not be processed.', 'input', 'unprocessable')
    if (text.includes('[[429]]'))
      return Response.json(
        { error: { message: 'Rate limit reached', type: 'requests', param: null, code: 'rate_limit_exceeded' } },
        { status: 429, headers: { 'retry-after': '1' } },
      )
    if (text.includes('[[500]]')) return error(500, 'server_error', 'The server had an error while processing your request.')
    if (text.includes('[[cut]]')) return cutStream(call.body.model)
    if (text.includes('[[hang]]')) {
      await new Promise<void>((resolve) => setTimeout(resolve, 30_000).unref())
      return error(500, 'server_error', 'too late')
    }
    return answer(call.path, call.body)
  })
  return { url: `${server.origin}/v1`, stop: server.stop }
}
