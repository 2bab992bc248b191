import { fakeUpstream, type FakeUpstream, openaiCompletion, openaiStream } from '../support/upstream'

/** The last user message's text of a chat request. */
const lastText = (body: Record<string, unknown>): string => {
  const messages = (body.messages as { content: unknown }[] | undefined) ?? []
  const content = messages.at(-1)?.content
  return typeof content === 'string' ? content : JSON.stringify(content ?? body.input ?? '')
}

/** A chat.completion calling the tool `lookup`. */
const toolCall = (model: string) =>
  Response.json({
    id: 'chatcmpl-tool',
    object: 'chat.completion',
    created: 1_700_000_000,
    model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }] },
        finish_reason: 'tool_calls',
      },
    ],
    usage: { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 },
  })

/** A stream that stops after its first pieces: no finish reason, no usage, no [DONE]. */
const cutStream = (model: string) => {
  const base = { id: 'chatcmpl-cut', object: 'chat.completion.chunk', created: 1_700_000_000, model }
  const chunk = { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: 'half an ans' }, finish_reason: null }] }
  return new Response(`data: ${JSON.stringify(chunk)}\n\n`, { headers: { 'content-type': 'text/event-stream' } })
}

/**
 * An OpenAI-compatible upstream whose answers follow the last message: "tool" calls a tool, "fail"
 * answers 500, "cut" cuts its stream, "big" answers 6,000 characters; anything else answers
 * "answer to <text>". Counts every call it gets (`requests`).
 */
export function countingUpstream(): FakeUpstream {
  return fakeUpstream((request) => {
    const model = String(request.body.model)
    if (request.path.endsWith('/embeddings')) {
      return Response.json({
        object: 'list',
        data: [{ object: 'embedding', index: 0, embedding: [0.25, -0.5, 0.75] }],
        model,
        usage: { prompt_tokens: 4, total_tokens: 4 },
      })
    }
    const text = lastText(request.body)
    if (text.includes('fail')) return Response.json({ error: { message: 'boom', type: 'server_error' } }, { status: 500 })
    if (text.includes('tool')) return toolCall(model)
    if (text.includes('cut') && request.body.stream) return cutStream(model)
    const content = text.includes('big') ? 'x'.repeat(6000) : `answer to ${text}`
    const usage = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 }
    return request.body.stream ? openaiStream(model, content.match(/.{1,5}/g) ?? [], usage) : openaiCompletion(model, content, usage)
  })
}

/** The calls a counting upstream got for chat completions (every inbound API but embeddings asks it there). */
export const chatCalls = (upstream: FakeUpstream): number => upstream.requests.filter((r) => r.path.endsWith('/chat/completions')).length

export const CONFIG = (upstreamUrl: string) => `
[tiers.t]
requests_per_minute = 1000
tokens_per_minute = 10000000
max_concurrent = 16
[tiers.small]
requests_per_minute = 1000
tokens_per_minute = 20
max_concurrent = 16
[upstreams.oai]
kind = "openai"
base_url = "${upstreamUrl}"
max_retries = 0
[cache]
max_entries = 12
max_entry_bytes = 4000
[aliases."openai/cached"]
targets = [{ upstream = "oai", model = "gpt-x", price = { input = 1, output = 2 } }]
cache = { ttl_s = 300 }
[aliases."openai/shared"]
targets = [{ upstream = "oai", model = "gpt-x" }]
cache = { ttl_s = 300, scope = "tier" }
[aliases."openai/tools"]
targets = [{ upstream = "oai", model = "gpt-x" }]
cache = { ttl_s = 300, tool_calls = true }
[aliases."openai/brief"]
targets = [{ upstream = "oai", model = "gpt-x" }]
cache = { ttl_s = 1 }
[aliases."openai/plain"]
targets = [{ upstream = "oai", model = "gpt-x" }]
`
