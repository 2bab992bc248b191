/**
 * The Responses API's routes on a real gateway process, as a caller sees them: create (JSON and
 * SSE), retrieve, delete, input items, input_tokens, the WebSocket upgrade Codex tries first; keys,
 * tiers, limits, budgets, usage, spend, headers and routing exactly as for chat completions; errors
 * in OpenAI's shape (https://platform.openai.com/docs/guides/error-codes); the OpenAPI document.
 * Shapes are checked against OpenAI's published OpenAPI document (test/fixtures/openai/openapi/).
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { connect } from 'node:net'
import { ADMIN_KEY, createKey } from '../support/cluster'
import { fakeOpenAI, type FakeOpenAI } from '../support/fakes/openai'
import { faultServer, type FaultServer } from '../support/faults'
import { tempDir, writeConfig } from '../support/gateway'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { openapiErrors } from '../support/openapi'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { checkedStream, created, get, OPEN_TIER, postJson, types } from './helpers'

setDefaultTimeout(TEST_MS)

/**
 * An OpenAI-compatible upstream that fails every request with a 500 in OpenAI's error shape
 * (https://platform.openai.com/docs/guides/error-codes: "500 - The server had an error while
 * processing your request"), counting the calls it got.
 */
function brokenUpstream() {
  let calls = 0
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: async (request) => {
      await request.text()
      calls++
      return Response.json(
        { error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: null } },
        { status: 500 },
      )
    },
  })
  return { url: `http://127.0.0.1:${server.port}/v1`, calls: () => calls, stop: () => void server.stop(true) }
}

const config = (broken: string, good: string, flaky: string) => `
${OPEN_TIER}
[tiers.slow]
requests_per_minute = 2
tokens_per_minute = 100000000
max_concurrent = 100

[tiers.narrow]
requests_per_minute = 1000
tokens_per_minute = 100000000
max_concurrent = 100
models = ["local/*"]

[upstreams.local]
kind = "mock"

[upstreams.good]
kind = "openai"
base_url = "${good}"
api_key_env = "FAKE_OPENAI_KEY"

[upstreams.broken_chat]
kind = "openai"
base_url = "${broken}"
api_key_env = "FAKE_OPENAI_KEY"
max_retries = 0
failure_threshold = 1
cooldown_ms = 600000

[upstreams.broken_responses]
kind = "openai"
base_url = "${broken}"
api_key_env = "FAKE_OPENAI_KEY"
max_retries = 0
failure_threshold = 1
cooldown_ms = 600000

[upstreams.broken_stream]
kind = "openai"
base_url = "${broken}"
api_key_env = "FAKE_OPENAI_KEY"
max_retries = 0
failure_threshold = 5

[upstreams.flaky]
kind = "openai"
base_url = "${flaky}"
max_retries = 1
failure_threshold = 100

[prices.echo]
input = 1
output = 1000

[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]

[aliases."fo/chat"]
targets = [{ upstream = "broken_chat", model = "gpt-4o" }, { upstream = "good", model = "gpt-4o" }]

[aliases."fo/responses"]
targets = [{ upstream = "broken_responses", model = "gpt-4o" }, { upstream = "good", model = "gpt-4o" }]

[aliases."retry/once"]
targets = [{ upstream = "flaky", model = "m" }]

[aliases."fo/stream"]
targets = [{ upstream = "broken_stream", model = "gpt-4o" }, { upstream = "good", model = "gpt-4o" }]
`

/** Sends a raw HTTP/1.1 request line and headers; resolves with the status line and headers that come back. */
function rawHead(url: string, head: string): Promise<string> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    let received = ''
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.write(head))
    socket.on('data', (chunk) => {
      received += chunk.toString('utf8')
      const end = received.indexOf('\r\n\r\n')
      if (end >= 0) {
        socket.destroy()
        resolve(received.slice(0, end))
      }
    })
    socket.on('error', reject)
  })
}

const dir = tempDir()
let gateway: GatewayProcess
let good: FakeOpenAI
let broken: ReturnType<typeof brokenUpstream>
let flaky: FaultServer
let key: string

setup(async () => {
  good = fakeOpenAI()
  broken = brokenUpstream()
  flaky = faultServer()
  const configPath = writeConfig(dir.path, config(broken.url, good.url, flaky.url))
  gateway = await spawnGateway({
    GATEWAY_DB: `${dir.path}/gateway.sqlite`,
    GATEWAY_CONFIG: configPath,
    GATEWAY_ADMIN_KEY: ADMIN_KEY,
    FAKE_OPENAI_KEY: 'sk-openai-fake',
  })
  key = (await createKey(gateway.url, { name: 'main', tier: 'open' })).key
})

teardown(async () => {
  await gateway.stop()
  good.stop()
  broken.stop()
  flaky.stop()
  dir[Symbol.dispose]()
})

describe('create, retrieve, delete, input items, input tokens', () => {
  test('create as JSON: a Response valid against the document, the alias as model, the headers of chat completions, cost on JSON', async () => {
    const response = await postJson(gateway.url, key, { model: 'local/echo', input: 'a b c' }, '/v1/responses', { 'x-request-id': 'resp-test-1' })
    const body = await created(response)
    expect(response.headers.get('content-type')).toStartWith('application/json')
    expect(openapiErrors('Response', body)).toBeNull()
    expect(body).toMatchObject({ object: 'response', status: 'completed', model: 'local/echo' })
    expect(body.id).toMatch(/^resp_/)
    expect(body.output).toEqual([
      {
        type: 'message',
        id: expect.stringMatching(/^msg_/),
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'a b c', annotations: [], logprobs: [] }],
      },
    ])
    expect(body.usage).toEqual({
      input_tokens: 3,
      input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      output_tokens: 3,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 6,
    })
    expect(response.headers.get('x-request-id')).toBe('resp-test-1')
    expect(response.headers.get('x-svc-model')).toBe('echo')
    expect(response.headers.get('x-svc-upstream')).toBe('local')
    expect(response.headers.get('x-svc-attempts')).toBe('1')
    expect(response.headers.get('x-svc-tier')).toBe('open')
    // 3 input tokens at $1/M and 3 output tokens at $1000/M.
    expect(response.headers.get('x-svc-cost-usd')).toBe('0.003003')
  })

  test('create as SSE: the event sequence numbered from 0, each event valid, the headers of a stream', async () => {
    const response = await postJson(gateway.url, key, { model: 'local/echo', input: 'one two three', stream: true })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toStartWith('text/event-stream')
    expect(response.headers.get('x-svc-upstream')).toBe('local')
    expect(response.headers.get('x-request-id')).toBeTruthy()
    const events = checkedStream(await response.text())
    expect(types(events)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      ...types(events).filter((t) => t === 'response.output_text.delta'),
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ])
    const completed = events.at(-1)!.data.response
    expect(completed.output[0].content[0].text).toBe('one two three')
    expect(completed.usage).toMatchObject({ input_tokens: 3, output_tokens: 3, total_tokens: 6 })
    // The stream's response is kept like a JSON one.
    expect(await (await get(gateway.url, key, `/v1/responses/${completed.id}`)).json()).toEqual(completed)
  })

  test('retrieve gives the Response as created; delete forgets it (then 404 in OpenAI shape, for GET and DELETE alike)', async () => {
    const body = await created(await postJson(gateway.url, key, { model: 'local/echo', input: 'keep this', metadata: { run: '7' } }))
    const retrieved = await get(gateway.url, key, `/v1/responses/${body.id}`)
    expect(retrieved.status).toBe(200)
    expect(retrieved.headers.get('content-type')).toStartWith('application/json')
    expect(await retrieved.json()).toEqual(body)

    const deleted = await get(gateway.url, key, `/v1/responses/${body.id}`, 'DELETE')
    expect(deleted.status).toBe(200)
    expect(await deleted.json()).toEqual({ id: body.id, object: 'response', deleted: true })
    for (const method of ['GET', 'DELETE']) {
      const gone = await get(gateway.url, key, `/v1/responses/${body.id}`, method)
      expect(gone.status).toBe(404)
      expect(await gone.json()).toMatchObject({
        error: { message: `No response found with id "${body.id}"`, type: 'not_found_error', code: 'response_not_found' },
      })
    }
    expect((await get(gateway.url, key, '/v1/responses/resp_never_made/input_items')).status).toBe(404)
  })

  test('input items: the turn’s items, desc by default, paged with limit and after, asc on request; ids kept or made', async () => {
    const input = [
      { type: 'message', role: 'developer', content: 'be brief' },
      { type: 'message', id: 'msg_caller_1', role: 'user', content: [{ type: 'input_text', text: 'one' }] },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'two' }] },
      { type: 'function_call', call_id: 'call_1', name: 'lookup', arguments: '{}' },
      { type: 'function_call_output', call_id: 'call_1', output: '42' },
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'three' },
          { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=' },
        ],
      },
      { role: 'user', content: 'four' },
    ]
    const body = await created(await postJson(gateway.url, key, { model: 'local/echo', input }))
    const list = async (query: string) => {
      const response = await get(gateway.url, key, `/v1/responses/${body.id}/input_items${query}`)
      expect(response.status).toBe(200)
      const page = (await response.json()) as {
        object: string
        data: { id: string; type: string; role?: string }[]
        first_id: string
        last_id: string
        has_more: boolean
      }
      expect(openapiErrors('ResponseItemList', page)).toBeNull()
      return page
    }
    const all = await list('')
    expect(all.object).toBe('list')
    expect(all.data.map((item) => item.type)).toEqual(['message', 'message', 'function_call_output', 'function_call', 'message', 'message', 'message'])
    expect(all.data.map((item) => item.role)).toEqual(['user', 'user', undefined, undefined, 'assistant', 'user', 'developer'])
    expect(all.data[5]!.id).toBe('msg_caller_1')
    expect(all.data[6]).toMatchObject({ type: 'message', role: 'developer', status: 'completed', content: [{ type: 'input_text', text: 'be brief' }] })
    expect(new Set(all.data.map((item) => item.id)).size).toBe(7)
    expect(all).toMatchObject({ first_id: all.data[0]!.id, last_id: all.data[6]!.id, has_more: false })

    const asc = all.data.toReversed().map((item) => item.id)
    const first = await list('?order=asc&limit=2')
    expect(first.data.map((item) => item.id)).toEqual(asc.slice(0, 2))
    expect(first).toMatchObject({ first_id: asc[0], last_id: asc[1], has_more: true })
    const second = await list(`?order=asc&limit=2&after=${first.last_id}`)
    expect(second.data.map((item) => item.id)).toEqual(asc.slice(2, 4))
    expect(second.has_more).toBe(true)
    const third = await list(`?order=asc&limit=3&after=${second.last_id}`)
    expect(third.data.map((item) => item.id)).toEqual(asc.slice(4))
    expect(third).toMatchObject({ has_more: false })
    const descPage = await list(`?limit=3&after=${all.data[0]!.id}`)
    expect(descPage.data.map((item) => item.id)).toEqual(all.data.slice(1, 4).map((item) => item.id))

    for (const bad of ['?limit=0', '?limit=101', '?limit=x', '?order=up']) {
      const refused = await get(gateway.url, key, `/v1/responses/${body.id}/input_items${bad}`)
      expect(refused.status).toBe(400)
      expect(await refused.json()).toMatchObject({ error: { type: 'invalid_request_error', param: bad.includes('limit') ? 'limit' : 'order' } })
    }
  })

  test('input_tokens: counted for the target (the mock counts words), not a request in usage', async () => {
    const response = await postJson(
      gateway.url,
      key,
      { model: 'local/echo', instructions: 'be brief', input: 'count these four words' },
      '/v1/responses/input_tokens',
    )
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(body).toEqual({ object: 'response.input_tokens', input_tokens: 6 })
    expect(openapiErrors('TokenCountsResource', body)).toBeNull()
  })

  test('a WebSocket upgrade on /v1/responses is 426 at once (Codex falls back to SSE); a plain GET is an unknown route', async () => {
    const { host } = new URL(gateway.url)
    const head = await rawHead(
      gateway.url,
      `GET /v1/responses HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${key}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
    )
    expect(head).toStartWith('HTTP/1.1 426')
    const plain = await get(gateway.url, key, '/v1/responses')
    expect(plain.status).toBe(404)
    expect(await plain.json()).toMatchObject({ error: { type: 'not_found_error' } })
  })
})

describe('keys, tiers, limits, budgets, usage', () => {
  test('a bad key: 401 in OpenAI’s shape, on every route', async () => {
    const routes: [string, string][] = [
      ['POST', '/v1/responses'],
      ['POST', '/v1/responses/input_tokens'],
      ['GET', '/v1/responses/resp_x'],
      ['DELETE', '/v1/responses/resp_x'],
      ['GET', '/v1/responses/resp_x/input_items'],
    ]
    for (const [method, path] of routes) {
      const response = await fetch(`${gateway.url}${path}`, {
        method,
        headers: { authorization: 'Bearer sk-cg-not-a-key', 'content-type': 'application/json' },
        body: method === 'POST' ? JSON.stringify({ model: 'local/echo', input: 'x' }) : undefined,
      })
      expect({ method, path, status: response.status }).toEqual({ method, path, status: 401 })
      expect(await response.json()).toMatchObject({ error: { message: 'Unauthorized', type: 'authentication_error' } })
    }
  })

  test('a tier that may not use the alias: 403; rpm: 429 with Retry-After; a budget: 429 budget_exceeded', async () => {
    const [narrow, slow, budgeted] = await Promise.all([
      createKey(gateway.url, { name: 'narrow', tier: 'narrow' }),
      createKey(gateway.url, { name: 'slow', tier: 'slow' }),
      createKey(gateway.url, { name: 'budgeted', tier: 'open', daily_budget_usd: 0.005 }),
    ])
    const refused = await postJson(gateway.url, narrow.key, { model: 'fo/chat', input: 'hi' })
    expect(refused.status).toBe(403)
    expect(await refused.json()).toMatchObject({ error: { type: 'permission_error', param: 'model' } })
    expect((await postJson(gateway.url, narrow.key, { model: 'local/echo', input: 'hi' })).status).toBe(200)

    const statuses = []
    for (let i = 0; i < 3; i++) statuses.push(await postJson(gateway.url, slow.key, { model: 'local/echo', input: 'hi' }))
    expect(statuses.map((r) => r.status)).toEqual([200, 200, 429])
    expect(statuses[2]!.headers.get('retry-after')).toMatch(/^\d+$/)
    expect(await statuses[2]!.json()).toMatchObject({ error: { type: 'rate_limit_error' } })

    let served = 0
    for (;;) {
      const response = await postJson(gateway.url, budgeted.key, { model: 'local/echo', input: 'a b c' })
      if (response.status === 200) {
        served++
        expect(served).toBeLessThan(4)
        continue
      }
      expect(response.status).toBe(429)
      expect(response.headers.get('retry-after')).toMatch(/^\d+$/)
      expect(await response.json()).toMatchObject({ error: { type: 'rate_limit_error', code: 'budget_exceeded' } })
      break
    }
    // $0.003003 a request: the budget of $0.005 is passed by the second.
    expect(served).toBe(2)
  })

  test('usage and spend are counted per key (GET /v1/usage): JSON and streamed requests alike, input_tokens not', async () => {
    const { key: own } = await createKey(gateway.url, { name: 'usage', tier: 'open' })
    await Promise.all([
      postJson(gateway.url, own, { model: 'local/echo', input: 'a b c' }).then((r) => r.text()),
      postJson(gateway.url, own, { model: 'local/echo', input: 'a b c' }).then((r) => r.text()),
      postJson(gateway.url, own, { model: 'local/echo', input: 'a b c', stream: true }).then((r) => r.text()),
      // Counted input tokens are no request in usage.
      postJson(gateway.url, own, { model: 'local/echo', input: 'a b c' }, '/v1/responses/input_tokens').then((r) => r.text()),
    ])
    const usage = (await (await get(gateway.url, own, '/v1/usage')).json()) as { totals: Record<string, number>; data: Record<string, unknown>[] }
    expect(usage.totals).toMatchObject({ requests: 3, errors: 0, prompt_tokens: 9, completion_tokens: 9, cost_usd: 0.009009 })
    expect(usage.data).toEqual([expect.objectContaining({ alias: 'local/echo', upstream: 'local', requests: 3 })])
  })
})

describe('routing as for chat completions', () => {
  test('a first target that 500s fails over to the second, with the same headers as chat completions; then its open circuit skips it', async () => {
    const before = broken.calls()
    const chat = await postJson(gateway.url, key, { model: 'fo/chat', messages: [{ role: 'user', content: 'hi' }] }, '/v1/chat/completions')
    const responses = await postJson(gateway.url, key, { model: 'fo/responses', input: 'hi' })
    expect(chat.status).toBe(200)
    const body = await created(responses)
    expect(body.model).toBe('fo/responses')
    expect(body.output[0].content[0].text).toContain('chatgate-openai-final')
    const headers = (r: Response) => ({
      upstream: r.headers.get('x-svc-upstream'),
      model: r.headers.get('x-svc-model'),
      attempts: r.headers.get('x-svc-attempts'),
    })
    expect(headers(responses)).toEqual({ upstream: 'good', model: 'gpt-4o', attempts: '2' })
    expect(headers(responses)).toEqual(headers(chat))
    expect(broken.calls() - before).toBe(2)

    // One failure opened each circuit (failure_threshold = 1): the broken target is not tried again.
    const again = await postJson(gateway.url, key, { model: 'fo/responses', input: 'hi' })
    const chatAgain = await postJson(gateway.url, key, { model: 'fo/chat', messages: [{ role: 'user', content: 'hi' }] }, '/v1/chat/completions')
    expect(again.status).toBe(200)
    expect(headers(again)).toEqual(headers(chatAgain))
    expect(headers(again).upstream).toBe('good')
    expect(broken.calls() - before).toBe(2)
    await Promise.all([again.text(), chatAgain.text()])
  })

  test('a target that fails once is retried (max_retries = 1), JSON and streamed, with the headers of chat completions', async () => {
    // The fault server fails the first attempt of each distinct content with a 502, then answers.
    const chat = await postJson(gateway.url, key, { model: 'retry/once', messages: [{ role: 'user', content: 'flaky:1#chat' }] }, '/v1/chat/completions')
    const json = await postJson(gateway.url, key, { model: 'retry/once', input: 'flaky:1#json' })
    const stream = await postJson(gateway.url, key, { model: 'retry/once', input: 'flaky:1#stream', stream: true })
    for (const response of [chat, json, stream]) {
      expect(response.status).toBe(200)
      expect({ upstream: response.headers.get('x-svc-upstream'), attempts: response.headers.get('x-svc-attempts') }).toEqual({
        upstream: 'flaky',
        attempts: '2',
      })
    }
    expect((await created(json)).output[0].content[0].text).toBe('fine')
    expect(checkedStream(await stream.text()).at(-1)!.data.type).toBe('response.completed')
    expect([flaky.hits.get('flaky:1#json'), flaky.hits.get('flaky:1#stream')]).toEqual([2, 2])
    await chat.text()
  })

  test('a stream whose first target 500s before it starts fails over too', async () => {
    const response = await postJson(gateway.url, key, { model: 'fo/stream', input: 'hi', stream: true })
    expect(response.status).toBe(200)
    expect(response.headers.get('x-svc-upstream')).toBe('good')
    expect(response.headers.get('x-svc-attempts')).toBe('2')
    const events = checkedStream(await response.text())
    expect(events.at(-1)!.data.type).toBe('response.completed')
  })

  test('errors in OpenAI’s shape: an unknown alias, a missing model, a bad input, background and conversation refused by name', async () => {
    const cases: [unknown, number, Record<string, unknown>][] = [
      [{ model: 'nope/x', input: 'hi' }, 404, { type: 'not_found_error', param: 'model' }],
      [{ input: 'hi' }, 400, { type: 'invalid_request_error' }],
      [{ model: 'local/echo', input: 7 }, 400, { type: 'invalid_request_error' }],
      [{ model: 'local/echo', input: 'hi', background: true }, 400, { type: 'invalid_request_error', code: 'unsupported_parameter', param: 'background' }],
      [
        { model: 'local/echo', input: 'hi', conversation: 'conv_1' },
        400,
        { type: 'invalid_request_error', code: 'unsupported_parameter', param: 'conversation' },
      ],
      ['{"model": "local/echo", "input": ', 400, { type: 'invalid_request_error' }],
    ]
    for (const [body, status, error] of cases) {
      const response = await postJson(gateway.url, key, body)
      const answer = (await response.json()) as { error: Record<string, unknown> }
      expect({ body, status: response.status }).toEqual({ body, status })
      expect(answer.error).toMatchObject(error)
      expect(typeof answer.error.message).toBe('string')
      expect(response.headers.get('x-request-id')).toBeTruthy()
    }
  })
})

describe('the error shape', () => {
  test('every error carries param and code, null when there is none (OpenAI’s ErrorResponse)', async () => {
    const answers = await Promise.all([
      postJson(gateway.url, 'sk-cg-not-a-key', { model: 'local/echo', input: 'x' }),
      get(gateway.url, key, '/v1/responses/resp_never_made'),
      postJson(gateway.url, key, { model: 'nope/x', input: 'hi' }),
      postJson(gateway.url, key, { model: 'local/echo', input: 'hi', background: true }),
    ])
    for (const answer of answers) {
      const body = (await answer.json()) as { error: Record<string, unknown> }
      expect({ status: answer.status, errors: openapiErrors('ErrorResponse', body) }).toEqual({ status: answer.status, errors: null })
      expect('param' in body.error && 'code' in body.error).toBe(true)
    }
  })
})

describe('the OpenAPI document', () => {
  test('every Responses route is in /swagger/json, with its methods, auth, request body and answers', async () => {
    const doc = (await (await fetch(`${gateway.url}/swagger/json`)).json()) as {
      paths: Record<string, Record<string, { security?: unknown; requestBody?: unknown; responses: Record<string, unknown>; tags?: string[] }>>
    }
    const routes: [string, string, string[]][] = [
      ['/v1/responses', 'post', ['200', '400', '401', '403', '404', '429', '502']],
      ['/v1/responses/input_tokens', 'post', ['200', '400', '401', '429']],
      ['/v1/responses/{id}', 'get', ['200', '401', '404']],
      ['/v1/responses/{id}', 'delete', ['200', '401', '404']],
      ['/v1/responses/{id}/input_items', 'get', ['200', '400', '401', '404']],
    ]
    for (const [path, method, statuses] of routes) {
      const operation = doc.paths[path]?.[method]
      expect({ path, method, documented: operation !== undefined }).toEqual({ path, method, documented: true })
      expect(operation!.security).toEqual([{ bearerAuth: [] }, { apiKeyHeader: [] }])
      expect(operation!.tags).toEqual(['Responses'])
      expect(Object.keys(operation!.responses)).toEqual(expect.arrayContaining(statuses))
      if (method === 'post') expect(operation!.requestBody).toBeDefined()
    }
    expect(Object.keys(doc.paths['/v1/responses']!)).toEqual(['post'])
  })
})
