import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { KeyService } from '../src/auth/key-service'
import { watchStores } from '../src/gateway'
import { openSqliteStores } from '../src/storage/sqlite'
import { chatBody, inProcessGateway, type InProcessGateway, json, tempDir, writeConfig } from './support/gateway'
import { waitFor } from './support/wait'
import { setup, teardown, TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

const ERROR_KEYS = ['code', 'message', 'param', 'type']

async function expectError(response: Response, status: number, type: string, code?: string) {
  expect(response.status).toBe(status)
  expect(response.headers.get('content-type')).toContain('application/json')
  const body = (await response.json()) as { error: Record<string, unknown> }
  expect(Object.keys(body)).toEqual(['error'])
  expect(typeof body.error.message).toBe('string')
  expect(body.error.type).toBe(type)
  for (const key of Object.keys(body.error)) expect(ERROR_KEYS).toContain(key)
  expect(JSON.stringify(body)).not.toMatch(/\n\s+at |\.ts:\d+/)
  if (code !== undefined) expect(body.error.code).toBe(code)
  return body.error
}

describe('service routes', () => {
  let gw: InProcessGateway
  setup(async () => (gw = await inProcessGateway()))
  teardown(() => gw.close())

  test('GET / describes the service', async () => {
    const response = await gw.request('/')
    expect(response.status).toBe(200)
    const body = (await response.json()) as Record<string, unknown>
    expect(body.name).toBe('chatgate')
    expect(body.docs).toBe('/swagger')
    expect(body.endpoints).toContain('POST /v1/chat/completions')
  })

  test('GET /health answers ok', async () => {
    const response = await gw.request('/health')
    expect(response.status).toBe(200)
    expect(((await response.json()) as { ok: boolean }).ok).toBe(true)
  })

  test('GET /v1/models lists every alias in the OpenAI shape, without a key', async () => {
    const body = (await (await gw.request('/v1/models')).json()) as { object: string; data: { id: string; object: string; owned_by: string }[] }
    expect(body.object).toBe('list')
    expect(body.data.map((m) => m.id)).toEqual([
      'local/echo',
      'local/embed',
      'openai/fast',
      'openai/smart',
      'openai/embed',
      'anthropic/fast',
      'anthropic/smart',
    ])
    expect(body.data[0]).toMatchObject({ id: 'local/echo', object: 'model', owned_by: 'local' })
  })

  test('GET /v1/models/{prefix}/{name} and its %2F form return one model', async () => {
    for (const path of ['/v1/models/local/echo', '/v1/models/local%2Fecho']) {
      const response = await gw.request(path)
      expect(response.status).toBe(200)
      expect(((await response.json()) as { id: string }).id).toBe('local/echo')
    }
    await expectError(await gw.request('/v1/models/local/nope'), 404, 'not_found_error', 'model_not_found')
  })

  test('unknown routes get the error shape', async () => {
    await expectError(await gw.request('/nope'), 404, 'not_found_error')
    await expectError(await gw.request('/v1/chat/completions'), 404, 'not_found_error')
  })

  test('every response has x-request-id and an integer x-svc-latency-ms', async () => {
    for (const response of [await gw.request('/'), await gw.request('/nope'), await gw.request('/v1/chat/completions', json(chatBody()))]) {
      expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
      expect(response.headers.get('x-svc-latency-ms')).toMatch(/^\d+$/)
    }
  })

  test('a sane incoming x-request-id is echoed, anything else replaced', async () => {
    const echoed = await gw.request('/health', { headers: { 'x-request-id': 'trace-1.2:3_x' } })
    expect(echoed.headers.get('x-request-id')).toBe('trace-1.2:3_x')
    for (const bad of ['has space', 'x'.repeat(129), 'semi;colon']) {
      const replaced = await gw.request('/health', { headers: { 'x-request-id': bad } })
      expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    }
  })

  test('/swagger renders from local assets and /swagger/json documents every route', async () => {
    const page = await (await gw.request('/swagger')).text()
    expect(page).toContain('/swagger/assets/swagger-ui-bundle.js')
    expect(page).not.toContain('unpkg.com')
    expect(page).toContain('<title>chatgate API</title>')
    const bundle = await gw.request('/swagger/assets/swagger-ui-bundle.js')
    expect(bundle.status).toBe(200)
    expect((await bundle.text()).length).toBeGreaterThan(100_000)
    expect((await gw.request('/swagger/assets/swagger-ui.css')).status).toBe(200)
    await expectError(await gw.request('/swagger/assets/package.json'), 404, 'not_found_error')

    const doc = (await (await gw.request('/swagger/json')).json()) as {
      info: { title: string }
      paths: Record<string, Record<string, { security?: unknown; requestBody?: unknown; responses: Record<string, unknown> }>>
      components: { securitySchemes: Record<string, unknown>; schemas: Record<string, unknown> }
    }
    expect(doc.info.title).toBe('chatgate API')
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/',
      '/health',
      '/metrics',
      '/v1/chat/completions',
      '/v1/embeddings',
      '/v1/messages',
      '/v1/messages/count_tokens',
      '/v1/models',
      '/v1/models/{prefix}/{name}',
      '/v1/responses',
      '/v1/responses/input_tokens',
      '/v1/responses/{id}',
      '/v1/responses/{id}/input_items',
      '/v1/usage',
      '/v1beta/models/{prefix}/{action}',
    ])
    const model = doc.paths['/v1/models/{prefix}/{name}']!.get! as unknown as { parameters: { name: string; in: string; required: boolean }[] }
    expect(model.parameters.map(({ name, in: where, required }) => ({ name, in: where, required }))).toEqual([
      { name: 'prefix', in: 'path', required: true },
      { name: 'name', in: 'path', required: true },
    ])
    const chat = doc.paths['/v1/chat/completions']!.post!
    expect(chat.security).toEqual([{ bearerAuth: [] }, { apiKeyHeader: [] }])
    expect(chat.requestBody).toBeDefined()
    expect(Object.keys(chat.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '404', '429', '502', '504']))
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['adminApiKey', 'adminBearer', 'apiKeyHeader', 'bearerAuth', 'googApiKey'])
    expect(doc.components.schemas.Error).toBeDefined()
  })
})

describe('authentication', () => {
  let gw: InProcessGateway
  setup(async () => (gw = await inProcessGateway()))
  teardown(() => gw.close())

  test('missing or unknown key: 401 with exactly the spec body', async () => {
    const variants: Record<string, string>[] = [{}, { authorization: 'Bearer sk-cg-wrong' }, { 'x-api-key': 'nope' }, { authorization: 'Basic abc' }]
    for (const headers of variants) {
      const response = await gw.request('/v1/chat/completions', json(chatBody(), headers))
      expect(response.status).toBe(401)
      expect(await response.json()).toEqual({ error: { message: 'Unauthorized', type: 'authentication_error', param: null, code: null } })
      expect(response.headers.get('x-svc-tier')).toBeNull()
    }
  })

  test('Bearer and x-api-key both authenticate', async () => {
    expect((await gw.request('/v1/chat/completions', json(chatBody(), { authorization: `Bearer ${gw.key}` }))).status).toBe(200)
    expect((await gw.request('/v1/chat/completions', json(chatBody(), { authorization: `bearer ${gw.key}` }))).status).toBe(200)
    expect((await gw.request('/v1/chat/completions', json(chatBody(), { 'x-api-key': gw.key }))).status).toBe(200)
  })

  test('when both are sent, Authorization wins', async () => {
    const validBearer = await gw.request('/v1/chat/completions', json(chatBody(), { authorization: `Bearer ${gw.key}`, 'x-api-key': 'wrong' }))
    expect(validBearer.status).toBe(200)
    const invalidBearer = await gw.request('/v1/chat/completions', json(chatBody(), { authorization: 'Bearer wrong', 'x-api-key': gw.key }))
    expect(invalidBearer.status).toBe(401)
  })
})

describe('chat completions', () => {
  const dir = tempDir()
  let gw: InProcessGateway
  const auth = () => ({ authorization: `Bearer ${gw.key}` })
  setup(async () => {
    const config = writeConfig(
      dir.path,
      `
[tiers.basic]
requests_per_minute = 1000
tokens_per_minute = 100000
max_concurrent = 8
models = ["local/*"]

[upstreams.local]
kind = "mock"

[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]

[aliases."other/echo"]
targets = [{ upstream = "local", model = "echo" }]
`,
    )
    gw = await inProcessGateway({ env: { GATEWAY_CONFIG: config, GATEWAY_MAX_BODY_BYTES: '2048' } })
  })
  teardown(() => {
    gw.close()
    dir[Symbol.dispose]()
  })

  test('answers with an OpenAI chat.completion whose model is the alias', async () => {
    const response = await gw.request('/v1/chat/completions', json(chatBody('say this back'), auth()))
    expect(response.status).toBe(200)
    const body = (await response.json()) as Record<string, any>
    expect(body.object).toBe('chat.completion')
    expect(body.model).toBe('local/echo')
    expect(body.choices[0].message).toEqual({ role: 'assistant', content: 'say this back', refusal: null })
    expect(body.choices[0].logprobs).toBeNull()
    expect(body.choices[0].finish_reason).toBe('stop')
    expect(body.usage).toEqual({ prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 })
    expect(response.headers.get('x-svc-model')).toBe('echo')
    expect(response.headers.get('x-svc-upstream')).toBe('local')
    expect(response.headers.get('x-svc-tier')).toBe('basic')
  })

  test('accepts content as text parts and every documented role', async () => {
    const body = {
      model: 'local/echo',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'developer', content: 'really' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
        { role: 'tool', content: 'result', tool_call_id: 'c1' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'part one ' },
            { type: 'text', text: 'part two' },
          ],
        },
      ],
      temperature: 0,
    }
    const response = await gw.request('/v1/chat/completions', json(body, auth()))
    expect(response.status).toBe(200)
    // Text parts are separate parts: the mock echoes them one per line, never glued together.
    expect(((await response.json()) as any).choices[0].message.content).toBe('part one \npart two')
  })

  test('rate-limit headers ride on every response to a valid key, errors included', async () => {
    const ok = await gw.request('/v1/chat/completions', json(chatBody(), auth()))
    const bad = await gw.request('/v1/chat/completions', json({ model: '' }, auth()))
    const missing = await gw.request('/v1/chat/completions', json(chatBody('x', { model: 'nope/nope' }), auth()))
    for (const response of [ok, bad, missing]) {
      expect(response.headers.get('x-svc-tier')).toBe('basic')
      expect(response.headers.get('x-ratelimit-limit')).toBe('1000')
      expect(response.headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/)
      expect(response.headers.get('x-ratelimit-reset')).toMatch(/^\d+$/)
      expect(response.headers.get('x-ratelimit-limit-tokens')).toBe('100000')
      expect(response.headers.get('x-ratelimit-remaining-tokens')).toMatch(/^\d+$/)
    }
    // Refused requests do not consume allowance.
    expect(bad.headers.get('x-ratelimit-remaining')).toBe(ok.headers.get('x-ratelimit-remaining'))
    expect(missing.headers.get('x-ratelimit-remaining')).toBe(ok.headers.get('x-ratelimit-remaining'))
    // Only responses that reached routing name a model and upstream.
    expect(ok.headers.get('x-svc-upstream')).toBe('local')
    expect(bad.headers.get('x-svc-upstream')).toBeNull()
  })

  test('schema violations: 400 invalid_request_error naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ messages: [{ role: 'user', content: 'x' }] }, 'model'],
      [{ model: '', messages: [{ role: 'user', content: 'x' }] }, 'model'],
      [{ model: 42, messages: [{ role: 'user', content: 'x' }] }, 'model'],
      [{ model: 'local/echo' }, 'messages'],
      [{ model: 'local/echo', messages: [] }, 'messages'],
      [{ model: 'local/echo', messages: [{ role: 'wizard', content: 'x' }] }, 'messages.0.role'],
      [{ model: 'local/echo', messages: [{ role: 'user', content: 42 }] }, 'messages.0.content'],
      [{ model: 'local/echo', messages: [{ role: 'user', content: null }] }, 'messages.0.content'],
      [{ model: 'local/echo', messages: [{ role: 'user', content: 'x' }], temperature: 2.5 }, 'temperature'],
      [{ model: 'local/echo', messages: [{ role: 'user', content: 'x' }], temperature: 'hot' }, 'temperature'],
      [{ model: 'local/echo', messages: [{ role: 'user', content: 'x' }], stream: 'yes' }, 'stream'],
      // A JSON API takes numbers as numbers: "5" is refused, not converted.
      [{ model: 'local/echo', messages: [{ role: 'user', content: 'x' }], max_tokens: '5' }, 'max_tokens'],
      [{ model: 'local/echo', messages: [{ role: 'user', content: 'x' }], max_tokens: 2.5 }, 'max_tokens'],
      [[1, 2], ''],
    ]
    for (const [body, param] of cases) {
      const error = await expectError(await gw.request('/v1/chat/completions', json(body, auth())), 400, 'invalid_request_error')
      if (param) expect(error.param).toBe(param)
      expect(error.message).toMatch(/^Invalid request/)
    }
  })

  test('malformed JSON: 400', async () => {
    const error = await expectError(
      await gw.request('/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json', ...auth() }, body: '{"model":' }),
      400,
      'invalid_request_error',
    )
    expect(error.message).toContain('Malformed JSON')
    await expectError(
      await gw.request('/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json', ...auth() }, body: '' }),
      400,
      'invalid_request_error',
    )
  })

  test('wrong content type: 415', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      await expectError(
        await gw.request('/v1/chat/completions', { method: 'POST', headers: { 'content-type': type, ...auth() }, body: JSON.stringify(chatBody()) }),
        415,
        'invalid_request_error',
      )
    }
    const charset = await gw.request('/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8', ...auth() },
      body: JSON.stringify(chatBody()),
    })
    expect(charset.status).toBe(200)
  })

  test('body over the limit: 413, declared or streamed', async () => {
    const big = JSON.stringify(chatBody('x'.repeat(4096)))
    await expectError(
      await gw.request('/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json', ...auth() }, body: big }),
      413,
      'invalid_request_error',
    )
    const chunked = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(big))
        controller.close()
      },
    })
    await expectError(
      await gw.request('/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json', ...auth() }, body: chunked }),
      413,
      'invalid_request_error',
    )
  })

  test('unknown alias, including names without a slash: 404 model_not_found pointing at /v1/models', async () => {
    for (const model of ['nope/nothing', 'gpt-4o']) {
      const error = await expectError(
        await gw.request('/v1/chat/completions', json(chatBody('x', { model }), auth())),
        404,
        'not_found_error',
        'model_not_found',
      )
      expect(error.message).toContain('/v1/models')
    }
  })

  test('an alias outside the tier: 403 permission_error', async () => {
    await expectError(await gw.request('/v1/chat/completions', json(chatBody('x', { model: 'other/echo' }), auth())), 403, 'permission_error')
  })

  test('stream: true relays chat.completion.chunk events and ends with [DONE]', async () => {
    const response = await gw.request('/v1/chat/completions', json(chatBody('one two three', { stream: true }), auth()))
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toContain('text/event-stream')
    const events = (await response.text()).split('\n\n').filter(Boolean)
    expect(events.at(-1)).toBe('data: [DONE]')
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice('data: '.length)))
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'local/echo')).toBe(true)
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe('one two three')
    // The caller did not ask for usage: no usage chunk, no usage field.
    expect(chunks.some((c) => 'usage' in c)).toBe(false)
  })

  test('stream_options.include_usage adds the final usage chunk', async () => {
    const response = await gw.request(
      '/v1/chat/completions',
      json(chatBody('one two three', { stream: true, stream_options: { include_usage: true } }), auth()),
    )
    const events = (await response.text()).split('\n\n').filter(Boolean)
    const last = JSON.parse(events.at(-2)!.slice('data: '.length))
    expect(last.choices).toEqual([])
    expect(last.usage).toEqual({ prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 })
  })
})

describe('key lifecycle', () => {
  test('a key revoked by another process stops working within a second; expired keys never work', async () => {
    using dir = tempDir()
    const dbPath = `${dir.path}/gateway.sqlite`
    const gw = await inProcessGateway({ env: { GATEWAY_DB: dbPath } })
    const stopWatching = watchStores(gw.gateway, 100)
    try {
      const call = () => gw.request('/v1/chat/completions', json(chatBody(), { 'x-api-key': gw.key }))
      expect((await call()).status).toBe(200)
      const other = openSqliteStores(dbPath)
      await new KeyService(other.keys, null).revoke(gw.key.slice(0, 12))
      await other.close()
      await waitFor(async () => (await call()).status === 401, 'the key revoked by another process to be refused')
    } finally {
      stopWatching()
      await gw.close()
    }
  })

  test('an expired key gets 401', async () => {
    let now = Date.now()
    const gw = await inProcessGateway({ now: () => now })
    try {
      const { key } = await gw.gateway.keys.create({ name: 'short', tier: 'free', expiresInDays: 1 })
      expect((await gw.request('/v1/chat/completions', json(chatBody(), { 'x-api-key': key }))).status).toBe(200)
      now += 86_400_001
      expect((await gw.request('/v1/chat/completions', json(chatBody(), { 'x-api-key': key }))).status).toBe(401)
    } finally {
      gw.close()
    }
  })
})
