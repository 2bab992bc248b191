/**
 * Native targets (`responses = "native"` on an openai-kind upstream) on a real gateway process: the
 * caller's body goes upstream byte for byte, only `model` replaced; the answer and every stream event
 * come back byte for byte, only `model` replaced (the nested `response.model` of lifecycle events
 * too); usage and spend come from the final `response.completed`; hosted tools pass; a stored
 * response is continued, read, listed and deleted at the upstream that holds it.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { ADMIN_KEY, createKey } from '../support/cluster'
import { type RecordedCall, recordingServer, type RecordingServer } from '../support/fakes/common'
import { tempDir, writeConfig } from '../support/gateway'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { get, OPEN_TIER, postJson, sseEvents } from './helpers'

setDefaultTimeout(TEST_MS)

const API_KEY = 'sk-native-fake'
/** The dated snapshot the fake says answered: what the gateway replaces with the alias. */
const SNAPSHOT = 'gpt-5.6-2026-08-01'

type Json = Record<string, any>

/**
 * A fake of OpenAI's Responses API, written from its published reference:
 *   - Create a model response, the Response object, retrieve, delete, list input items, input token
 *     counts: https://platform.openai.com/docs/api-reference/responses
 *   - Streaming events (`event: <type>` then `data: <json>` with `sequence_number`; the whole Response
 *     in response.created / in_progress / completed): https://platform.openai.com/docs/api-reference/responses-streaming
 *   - Errors: https://platform.openai.com/docs/guides/error-codes
 * JSON answers are pretty-printed as OpenAI writes them, so a relay that re-encodes shows, and
 * gzip-encoded when the request accepts it (as OpenAI's edge does), so a relay must decode. It holds
 * the responses it made (unless `store: false`) for previous_response_id, GET, DELETE and input items.
 * Usage: 1000 input tokens (400 cached), 200 output tokens (50 reasoning). An input containing
 * `[[cut]]` streams its deltas and then the connection ends without a terminal event.
 */
function fakeResponsesApi(name: string) {
  const held = new Map<string, { response: Json; input: Json[] }>()
  /** Every stream it sent, as sent. */
  const streams: string[] = []
  let counter = 0
  const error = (status: number, message: string, param: string | null = null, code: string | null = null) =>
    Response.json({ error: { message, type: 'invalid_request_error', param, code } }, { status })

  function respond(body: Json) {
    const id = `resp_${name}_${++counter}`
    const text = `${name} answered turn ${counter}`
    const message = {
      id: `msg_${name}_${counter}`,
      type: 'message',
      status: 'completed',
      content: [{ type: 'output_text', annotations: [], logprobs: [], text }],
      role: 'assistant',
    }
    const base = {
      id,
      object: 'response',
      created_at: 1_760_000_000 + counter,
      status: 'in_progress',
      background: false,
      error: null,
      incomplete_details: null,
      instructions: body.instructions ?? null,
      max_output_tokens: body.max_output_tokens ?? null,
      model: SNAPSHOT,
      output: [] as Json[],
      parallel_tool_calls: true,
      previous_response_id: body.previous_response_id ?? null,
      reasoning: { effort: null, summary: null },
      store: body.store ?? true,
      temperature: 1.0,
      text: { format: { type: 'text' } },
      tool_choice: 'auto',
      tools: body.tools ?? [],
      top_p: 1.0,
      truncation: 'disabled',
      usage: null as Json | null,
      user: null,
      metadata: body.metadata ?? {},
    }
    const done = {
      ...base,
      status: 'completed',
      output: [message],
      usage: {
        input_tokens: 1000,
        input_tokens_details: { cached_tokens: 400 },
        output_tokens: 200,
        output_tokens_details: { reasoning_tokens: 50 },
        total_tokens: 1200,
      },
    }
    if (body.store !== false)
      held.set(id, { response: done, input: typeof body.input === 'string' ? [{ type: 'message', role: 'user', content: body.input }] : body.input })
    return { base, done, message, text }
  }

  function stream(base: Json, done: Json, message: Json, text: string, cut: boolean): Response {
    let n = 0
    const event = (type: string, data: Json) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data, sequence_number: n++ })}\n\n`
    const pieces = [text.slice(0, 5), text.slice(5, 12), text.slice(12)]
    const item = { id: message.id, type: 'message', status: 'in_progress', content: [], role: 'assistant' }
    const part = { type: 'output_text', annotations: [], logprobs: [], text: '' }
    const at = { item_id: message.id, output_index: 0, content_index: 0 }
    const events = [
      event('response.created', { response: base }),
      event('response.in_progress', { response: base }),
      event('response.output_item.added', { output_index: 0, item }),
      event('response.content_part.added', { ...at, part }),
      ...pieces.map((delta) => event('response.output_text.delta', { ...at, delta, logprobs: [] })),
    ]
    if (cut) {
      const encoder = new TextEncoder()
      // The events go out (a pause after each, so they leave before the cut), then the connection breaks.
      const body = new ReadableStream({
        async pull(controller) {
          for (const e of events) {
            controller.enqueue(encoder.encode(e))
            await Bun.sleep(5)
          }
          controller.error(new Error('fake: connection cut on purpose'))
        },
      })
      return new Response(body, { headers: { 'content-type': 'text/event-stream; charset=utf-8' } })
    }
    events.push(
      event('response.output_text.done', { ...at, text, logprobs: [] }),
      event('response.content_part.done', { ...at, part: { ...part, text } }),
      event('response.output_item.done', { output_index: 0, item: message }),
      event('response.completed', { response: done }),
    )
    streams.push(events.join(''))
    return new Response(streams.at(-1), { headers: { 'content-type': 'text/event-stream; charset=utf-8' } })
  }

  /** A JSON answer as text, gzip-encoded when the caller accepts it. */
  const jsonAnswer = (call: RecordedCall, text: string) =>
    (call.headers.get('accept-encoding') ?? '').includes('gzip')
      ? new Response(Bun.gzipSync(text), { headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } })
      : new Response(text, { headers: { 'content-type': 'application/json' } })

  const server: RecordingServer = recordingServer((call) => {
    if (call.headers.get('authorization') !== `Bearer ${API_KEY}`) return error(401, 'Incorrect API key provided.', null, 'invalid_api_key')
    const path = call.path.replace(/^\/v1\/responses/, '')
    if (call.method === 'POST' && path === '') {
      const body = call.body as Json
      if (body.previous_response_id && !held.has(body.previous_response_id)) {
        return error(404, `Previous response with id '${body.previous_response_id}' not found.`, 'previous_response_id', 'previous_response_not_found')
      }
      const { base, done, message, text } = respond(body)
      if (body.stream === true) return stream(base, done, message, text, JSON.stringify(body.input).includes('[[cut]]'))
      return jsonAnswer(call, JSON.stringify(done, null, 2))
    }
    if (call.method === 'POST' && path === '/input_tokens') return Response.json({ object: 'response.input_tokens', input_tokens: 4242 })
    const [, id, rest] = /^\/([^/]+)(\/input_items)?$/.exec(path) ?? []
    const found = id ? held.get(id) : undefined
    if (!found) return error(404, `No response found with id '${id}'.`)
    if (call.method === 'GET' && rest) {
      const data = found.input.map((item, i) => ({ id: `msg_in_${i}`, type: 'message', status: 'completed', ...item }))
      return Response.json({ object: 'list', data, first_id: data[0]?.id, last_id: data.at(-1)?.id, has_more: false })
    }
    if (call.method === 'GET') return jsonAnswer(call, JSON.stringify(found.response, null, 2))
    if (call.method === 'DELETE') {
      held.delete(id!)
      return Response.json({ id, object: 'response', deleted: true })
    }
    return error(404, `Invalid URL (${call.method} ${call.path})`)
  })
  return { ...server, url: `${server.origin}/v1`, held, streams, posts: () => server.calls.filter((c) => c.method === 'POST' && c.path === '/v1/responses') }
}

const config = (a: string, b: string) => `
${OPEN_TIER}
[upstreams.local]
kind = "mock"

[upstreams.a]
kind = "openai"
base_url = "${a}"
api_key_env = "NATIVE_KEY"
responses = "native"
max_retries = 0

[upstreams.b]
kind = "openai"
base_url = "${b}"
api_key_env = "NATIVE_KEY"
responses = "native"
max_retries = 0

[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]

[aliases."native/a"]
targets = [{ upstream = "a", model = "gpt-5.6", price = { input = 2, output = 10, cached_input = 1 } }]

[aliases."native/b"]
targets = [{ upstream = "b", model = "gpt-5.6" }]

[aliases."native/pair"]
targets = [{ upstream = "a", model = "gpt-5.6" }, { upstream = "b", model = "gpt-5.6" }]
`

const dir = tempDir()
let gateway: GatewayProcess
let a: ReturnType<typeof fakeResponsesApi>
let b: ReturnType<typeof fakeResponsesApi>
let key: string

setup(async () => {
  a = fakeResponsesApi('a')
  b = fakeResponsesApi('b')
  gateway = await spawnGateway({
    GATEWAY_DB: `${dir.path}/gateway.sqlite`,
    GATEWAY_CONFIG: writeConfig(dir.path, config(a.url, b.url)),
    GATEWAY_ADMIN_KEY: ADMIN_KEY,
    NATIVE_KEY: API_KEY,
  })
  key = (await createKey(gateway.url, { name: 'native', tier: 'open' })).key
})

teardown(async () => {
  await gateway.stop()
  a.stop()
  b.stop()
  dir[Symbol.dispose]()
})

/** The caller's body as a client might write it: odd spacing, escapes, fields the gateway does not know, hosted tools. */
const callerText = (model: string, extra = '') =>
  `{ "model" : "${model}",\n  "input": [{"role":"user","content":[{"type":"input_text","text":"caf\\u00e9 \\"quoted\\" \u00e9"}]}],` +
  ` "tools": [{"type":"web_search","search_context_size":"low"},{"type":"file_search","vector_store_ids":["vs_1"]},{"type":"code_interpreter","container":{"type":"auto"}},` +
  `{"type":"mcp","server_label":"deepwiki","server_url":"https://mcp.deepwiki.com/mcp","require_approval":"never"},{"type":"function","name":"f","parameters":{"type":"object"}}],` +
  ` "include": ["reasoning.encrypted_content", "web_search_call.action.sources"], "service_tier": "flex", "some_future_field": {"x": [1, 2.50, true]}${extra} }`

describe('the body goes as sent, the answer comes back as sent: only model replaced', () => {
  test('JSON: byte for byte both ways, hosted tools passed, nothing dropped; usage and spend from the answer; compression decoded', async () => {
    const sent = callerText('native/a')
    // Codex asks for compressed answers; the gateway decodes what it fetches and encodes nothing itself.
    const response = await postJson(gateway.url, key, sent, '/v1/responses', { 'accept-encoding': 'zstd,gzip' })
    const text = await response.text()
    expect(response.status).toBe(200)
    expect(response.headers.get('content-encoding')).toBeNull()
    expect(a.posts().at(-1)!.headers.get('accept-encoding')).not.toBe('zstd,gzip')
    const upstream = a.posts().at(-1)!
    expect(upstream.text).toBe(sent.replace('"native/a"', '"gpt-5.6"'))
    const answered = JSON.stringify(a.held.get(JSON.parse(text).id)!.response, null, 2)
    expect(text).toBe(answered.replace(`"model": "${SNAPSHOT}"`, '"model": "native/a"'))
    expect(response.headers.get('x-svc-upstream')).toBe('a')
    expect(response.headers.get('x-svc-model')).toBe('gpt-5.6')
    expect(response.headers.get('x-svc-dropped')).toBeNull()
    // 600 uncached at $2/M + 400 cached at $1/M + 200 out at $10/M = $0.0036.
    expect(response.headers.get('x-svc-cost-usd')).toBe('0.0036')
  })

  test('a stream: every event byte for byte, response.model in the lifecycle events the alias; usage counted from response.completed', async () => {
    const { key: own } = await createKey(gateway.url, { name: 'native-usage', tier: 'open' })
    const sent = callerText('native/a', ', "stream": true')
    const response = await postJson(gateway.url, own, sent)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toStartWith('text/event-stream')
    const body = await response.text()
    expect(a.posts().at(-1)!.text).toBe(sent.replace('"native/a"', '"gpt-5.6"'))
    const events = sseEvents(body)
    const upstreamEvents = sseEvents(a.streams.at(-1)!)
    expect(events.map((e) => e.event)).toEqual(upstreamEvents.map((e) => e.event))
    expect(events.map((e) => e.text)).toEqual(upstreamEvents.map((e) => e.text.replace(`"model":"${SNAPSHOT}"`, '"model":"native/a"')))
    expect(events.filter((e) => e.data.response).map((e) => e.data.response.model)).toEqual(['native/a', 'native/a', 'native/a'])
    // A second, JSON, request: the key's usage is the two answers' usage.
    await (await postJson(gateway.url, own, callerText('native/a'))).text()
    const usage = (await (await get(gateway.url, own, '/v1/usage')).json()) as { totals: Record<string, number> }
    expect(usage.totals).toMatchObject({ requests: 2, prompt_tokens: 2000, completion_tokens: 400, cost_usd: 0.0072 })
  })

  test('a stream the upstream cuts: response.failed with the next sequence number, never a response.completed', async () => {
    const response = await postJson(gateway.url, key, { model: 'native/a', input: 'go [[cut]]', stream: true })
    expect(response.status).toBe(200)
    const events = sseEvents(await response.text())
    const types = events.map((e) => e.data?.type)
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.failed',
    ])
    expect(types.at(-1)).toBe('response.failed')
    expect(types).not.toContain('response.completed')
    const failed = events.at(-1)!.data
    expect(failed.sequence_number).toBe(7)
    expect(failed.response).toMatchObject({ status: 'failed', model: 'native/a', error: { code: 'server_error' } })
  })

  test('input_tokens: the native target counts it, the body sent as is with only model replaced', async () => {
    const sent = callerText('native/a')
    const response = await postJson(gateway.url, key, sent, '/v1/responses/input_tokens')
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ object: 'response.input_tokens', input_tokens: 4242 })
    const call = a.calls.findLast((c) => c.path === '/v1/responses/input_tokens')!
    expect(call.text).toBe(sent.replace('"native/a"', '"gpt-5.6"'))
  })
})

describe('stored native responses live at their upstream', () => {
  test('previous_response_id goes to the upstream that holds it, as sent; GET, input_items and DELETE go there too', async () => {
    const first = (await (await postJson(gateway.url, key, { model: 'native/b', input: 'remember 7' })).json()) as { id: string }
    expect(first.id).toMatch(/^resp_b_/)
    const aBefore = a.posts().length
    const sent = `{"model":"native/pair","previous_response_id":"${first.id}","input":"what was it?"}`
    const next = await postJson(gateway.url, key, sent)
    expect(next.status).toBe(200)
    expect(next.headers.get('x-svc-upstream')).toBe('b')
    expect(a.posts().length).toBe(aBefore)
    expect(b.posts().at(-1)!.text).toBe(sent.replace('"native/pair"', '"gpt-5.6"'))
    const second = (await next.json()) as { id: string; model: string; previous_response_id: string }
    expect(second).toMatchObject({ model: 'native/pair', previous_response_id: first.id })

    const retrieved = await get(gateway.url, key, `/v1/responses/${second.id}`)
    expect(retrieved.status).toBe(200)
    const retrievedText = await retrieved.text()
    expect(retrievedText).toBe(JSON.stringify(b.held.get(second.id)!.response, null, 2).replace(`"model": "${SNAPSHOT}"`, '"model": "native/pair"'))
    expect(b.calls.at(-1)!).toMatchObject({ method: 'GET', path: `/v1/responses/${second.id}` })

    const items = (await (await get(gateway.url, key, `/v1/responses/${second.id}/input_items?limit=5&order=asc`)).json()) as { data: Json[] }
    expect(items.data).toEqual([{ id: 'msg_in_0', type: 'message', status: 'completed', role: 'user', content: 'what was it?' }])
    expect(b.calls.at(-1)!).toMatchObject({ method: 'GET', path: `/v1/responses/${second.id}/input_items`, search: '?limit=5&order=asc' })

    // Another key sees none of it, and cannot continue it.
    const { key: other } = await createKey(gateway.url, { name: 'other', tier: 'open' })
    expect((await get(gateway.url, other, `/v1/responses/${second.id}`)).status).toBe(404)
    expect((await get(gateway.url, other, `/v1/responses/${second.id}`, 'DELETE')).status).toBe(404)
    const foreign = await postJson(gateway.url, other, { model: 'native/pair', previous_response_id: second.id, input: 'x' })
    expect(foreign.status).toBe(404)
    expect(await foreign.json()).toMatchObject({ error: { type: 'not_found_error', param: 'previous_response_id' } })
    expect(b.held.has(second.id)).toBe(true)

    const deleted = await get(gateway.url, key, `/v1/responses/${second.id}`, 'DELETE')
    expect(deleted.status).toBe(200)
    expect(await deleted.json()).toEqual({ id: second.id, object: 'response', deleted: true })
    expect(b.held.has(second.id)).toBe(false)
    expect((await get(gateway.url, key, `/v1/responses/${second.id}`)).status).toBe(404)
  })

  test('input_tokens with a native previous_response_id is counted by the upstream that holds it, the body as sent', async () => {
    const first = (await (await postJson(gateway.url, key, { model: 'native/b', input: 'count on me' })).json()) as { id: string }
    const aBefore = a.calls.length
    const sent = `{"model":"native/pair","previous_response_id":"${first.id}","input":"how many?"}`
    const response = await postJson(gateway.url, key, sent, '/v1/responses/input_tokens')
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ object: 'response.input_tokens', input_tokens: 4242 })
    expect(a.calls.length).toBe(aBefore)
    expect(b.calls.at(-1)!).toMatchObject({ method: 'POST', path: '/v1/responses/input_tokens', text: sent.replace('"native/pair"', '"gpt-5.6"') })
  })

  test('a streamed native response is kept too; store:false is not: its id is unknown to the gateway', async () => {
    const streamed = sseEvents(await (await postJson(gateway.url, key, { model: 'native/b', input: 'hi', stream: true })).text())
    const id = streamed.at(-1)!.data.response.id as string
    const next = await postJson(gateway.url, key, { model: 'native/pair', previous_response_id: id, input: 'more' })
    expect(next.status).toBe(200)
    expect(next.headers.get('x-svc-upstream')).toBe('b')
    await next.text()

    const unstored = (await (await postJson(gateway.url, key, { model: 'native/b', input: 'hi', store: false })).json()) as { id: string }
    expect((await get(gateway.url, key, `/v1/responses/${unstored.id}`)).status).toBe(404)
    const refused = await postJson(gateway.url, key, { model: 'native/b', previous_response_id: unstored.id, input: 'more' })
    expect(refused.status).toBe(404)
  })

  test('a conversation the gateway holds, continued on a native target: the whole history as input, no previous_response_id', async () => {
    const first = (await (await postJson(gateway.url, key, { model: 'local/echo', input: 'alpha beta' })).json()) as { id: string }
    const next = await postJson(gateway.url, key, { model: 'native/a', previous_response_id: first.id, input: 'gamma' })
    expect(next.status).toBe(200)
    await next.text()
    const sent = a.posts().at(-1)!.body as Json
    expect(sent.previous_response_id).toBeUndefined()
    expect(sent.model).toBe('gpt-5.6')
    expect(sent.input).toEqual([
      { type: 'message', role: 'user', content: 'alpha beta' },
      expect.objectContaining({ type: 'message', role: 'assistant', content: [expect.objectContaining({ type: 'output_text', text: 'alpha beta' })] }),
      { type: 'message', role: 'user', content: 'gamma' },
    ])
  })
})
