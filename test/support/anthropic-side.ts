import { join } from 'node:path'
import { tempDir, writeConfig } from './gateway'
import { type GatewayProcess, spawnGateway } from './process'
import { type FakeUpstream, fakeUpstream, openaiCompletion, type RecordedRequest } from './upstream'

/**
 * One gateway in front of a fake OpenAI-compatible upstream (three upstream entries on it, one per
 * `mid_system` mode) and a fake Anthropic upstream, both recording what they get: for what the
 * Anthropic side's requests become on each kind of target.
 *
 * Wire formats: https://platform.openai.com/docs/api-reference/chat/object and
 * https://docs.anthropic.com/en/api/messages (the message object).
 */
export interface AnthropicSide {
  gateway: GatewayProcess
  key: string
  openai: FakeUpstream
  anthropic: FakeUpstream
  /** POSTs a Messages request (x-api-key auth) with a request id of the test's choosing. */
  messages(body: Record<string, unknown>, requestId?: string): Promise<Response>
  chat(body: Record<string, unknown>): Promise<Response>
  last(upstream: FakeUpstream): RecordedRequest
  dispose(): Promise<void>
}

/** The reasoning the fake OpenAI-compatible upstream gives when asked for reasoning. */
export const UPSTREAM_REASONING = 'Let me think about it.'
export const OPENAI_USAGE = { prompt_tokens: 40, completion_tokens: 9, total_tokens: 49 }

async function openaiAnswer(request: RecordedRequest): Promise<Response> {
  const body = request.body as { model: string; stream?: boolean; reasoning_effort?: string; response_format?: { type: string } }
  if (body.stream) {
    const base = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1_700_000_000, model: body.model }
    const deltas = [
      { role: 'assistant', content: '' },
      ...(body.reasoning_effort ? [{ reasoning_content: 'Let me ' }, { reasoning_content: 'think about it.' }] : []),
      { content: 'Hello' },
      { content: ' there' },
    ]
    const events = [
      ...deltas.map((delta) => ({ ...base, choices: [{ index: 0, delta, finish_reason: null }] })),
      { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
      { ...base, choices: [], usage: OPENAI_USAGE },
    ]
    return new Response(events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n', { headers: { 'content-type': 'text/event-stream' } })
  }
  const content = body.response_format?.type === 'json_schema' ? '{"answer":42}' : 'Hello there'
  const answer = openaiCompletion(body.model, content, OPENAI_USAGE)
  if (!body.reasoning_effort) return answer
  const completion = (await answer.json()) as { choices: { message: Record<string, unknown> }[] }
  completion.choices[0]!.message.reasoning_content = UPSTREAM_REASONING
  return Response.json(completion)
}

function anthropicAnswer(request: RecordedRequest): Response {
  const body = request.body as { model: string }
  return Response.json({
    id: 'msg_upstream_1',
    type: 'message',
    role: 'assistant',
    model: body.model,
    content: [
      { type: 'thinking', thinking: 'Anthropic thought.', signature: 'anthropic-signature-1' },
      { type: 'text', text: 'Hi from Anthropic' },
    ],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 12, output_tokens: 5 },
  })
}

const config = (openai: string, anthropic: string) => `
[tiers.pro]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 100

[upstreams.oa]
kind = "openai"
base_url = "${openai}"
api_key_env = "FAKE_UPSTREAM_KEY"

[upstreams.oa_user]
kind = "openai"
base_url = "${openai}"
api_key_env = "FAKE_UPSTREAM_KEY"
mid_system = "as_user"

[upstreams.oa_fold]
kind = "openai"
base_url = "${openai}"
api_key_env = "FAKE_UPSTREAM_KEY"
mid_system = "fold"

[upstreams.an]
kind = "anthropic"
base_url = "${anthropic}"
api_key_env = "FAKE_UPSTREAM_KEY"

[upstreams.local]
kind = "mock"

[aliases."t/oa"]
targets = [{ upstream = "oa", model = "gpt-fake" }]

[aliases."t/oa-user"]
targets = [{ upstream = "oa_user", model = "gpt-fake" }]

[aliases."t/oa-fold"]
targets = [{ upstream = "oa_fold", model = "gpt-fake" }]

[aliases."anthropic/claude"]
targets = [{ upstream = "an", model = "claude-fake" }]

[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]
`

export async function anthropicSide(): Promise<AnthropicSide> {
  const dir = tempDir('chatgate-anthropic-side-')
  const openai = fakeUpstream(openaiAnswer)
  const anthropic = fakeUpstream(anthropicAnswer)
  const gateway = await spawnGateway(
    {
      GATEWAY_DB: join(dir.path, 'gateway.sqlite'),
      GATEWAY_CONFIG: writeConfig(dir.path, config(openai.url, anthropic.url)),
      FAKE_UPSTREAM_KEY: 'sk-fake-upstream',
    },
    { expectFirstKey: true },
  )
  const key = gateway.firstKey!
  const post = (path: string, body: Record<string, unknown>, headers: Record<string, string>) =>
    fetch(`${gateway.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
  return {
    gateway,
    key,
    openai,
    anthropic,
    messages: (body, requestId) =>
      post('/v1/messages', body, { 'x-api-key': key, 'anthropic-version': '2023-06-01', ...(requestId ? { 'x-request-id': requestId } : {}) }),
    chat: (body) => post('/v1/chat/completions', body, { authorization: `Bearer ${key}` }),
    last: (upstream) => upstream.requests.at(-1)!,
    async dispose() {
      await gateway.stop()
      openai.stop()
      anthropic.stop()
      dir[Symbol.dispose]()
    },
  }
}
