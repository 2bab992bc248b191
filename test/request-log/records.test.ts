/**
 * The request log on a real gateway process: one record per request to every inbound API, refused
 * ones included (401 aside), with the fields an on-call engineer looks for; the admin API's filters
 * and pages, which neither skip nor repeat while records are written.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { fakeAnthropic, type FakeAnthropic } from '../support/fakes/anthropic'
import { tempDir, writeConfig } from '../support/gateway'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { fakeUpstream, type FakeUpstream, openaiCompletion } from '../support/upstream'
import { ADMIN_KEY, admin, createKey, everyRecord, MOCK, page, post, recordOf, TIERS } from './support'

setDefaultTimeout(TEST_MS)

const dir = tempDir()
let gateway: GatewayProcess
let flaky: FakeUpstream
let claude: FakeAnthropic
let open: { key: string; id: string; prefix: string }
let tight: { key: string; id: string; prefix: string }
let calls = 0

setup(async () => {
  // Every other call fails: a request's first attempt gets 500, its retry the answer.
  flaky = fakeUpstream((request) =>
    calls++ % 2 === 0 ? Response.json({ error: { message: 'boom' } }, { status: 500 }) : openaiCompletion(String(request.body.model), 'Fine'),
  )
  claude = fakeAnthropic()
  const config = `${TIERS}${MOCK}
[upstreams.flaky]
kind = "openai"
base_url = "${flaky.url}"
max_retries = 1

[upstreams.claude]
kind = "anthropic"
base_url = "${claude.url}"
api_key_env = "FAKE_ANTHROPIC_KEY"

[aliases."flaky/model"]
targets = [{ upstream = "flaky", model = "gpt-4o" }]

[aliases."claude/model"]
targets = [{ upstream = "claude", model = "claude-sonnet-4-5" }]
`
  gateway = await spawnGateway({
    GATEWAY_DB: `${dir.path}/gateway.sqlite`,
    GATEWAY_CONFIG: writeConfig(dir.path, config),
    GATEWAY_ADMIN_KEY: ADMIN_KEY,
    FAKE_ANTHROPIC_KEY: 'sk-ant-fake',
  })
  open = await createKey(gateway.url, 'open')
  tight = await createKey(gateway.url, 'tight')
})

teardown(async () => {
  await gateway.stop()
  flaky.stop()
  claude.stop()
  dir[Symbol.dispose]()
})

const rid = (name: string) => `${name}-${crypto.randomUUID()}`
const chat = (content = 'hello there', extra: Record<string, unknown> = {}) => ({ model: 'local/echo', messages: [{ role: 'user', content }], ...extra })

describe('one record per request, for every inbound API', () => {
  test('chat completions, JSON: key, tier, alias, attempt, tokens, answer id and finish reason, user agent', async () => {
    const id = rid('chat')
    const response = await post(gateway.url, '/v1/chat/completions', open.key, chat(), { 'x-request-id': id, 'user-agent': 'on-call/1.0' })
    expect(response.status).toBe(200)
    const answer = (await response.json()) as { id: string }
    const r = await recordOf(gateway.url, id)
    expect(r).toMatchObject({
      id,
      key_id: open.id,
      key_prefix: open.prefix,
      tier: 'open',
      api: 'chat.completions',
      method: 'POST',
      path: '/v1/chat/completions',
      route: '/v1/chat/completions',
      alias: 'local/echo',
      upstream: 'local',
      upstream_model: 'echo',
      status: 200,
      error_type: null,
      prompt_tokens: 2,
      completion_tokens: 2,
      ttft_ms: null,
      response_id: answer.id,
      finish_reasons: ['stop'],
      user_agent: 'on-call/1.0',
      request_body: null,
      response_body: null,
    })
    expect(r.attempts).toHaveLength(1)
    expect(r.attempts[0]).toMatchObject({ upstream: 'local', model: 'echo', status: null, outcome: 'ok' })
    expect(Date.parse(r.time)).toBeGreaterThan(0)
  })

  test('a stream: its time to first token, its tokens and finish reason', async () => {
    const id = rid('stream')
    const response = await post(
      gateway.url,
      '/v1/chat/completions',
      open.key,
      chat('one two three', { stream: true, stream_options: { include_usage: true } }),
      {
        'x-request-id': id,
      },
    )
    expect(await response.text()).toEndWith('data: [DONE]\n\n')
    const r = await recordOf(gateway.url, id)
    expect(r).toMatchObject({ api: 'chat.completions', status: 200, prompt_tokens: 3, completion_tokens: 3, finish_reasons: ['stop'] })
    expect(r.ttft_ms).toBeNumber()
  })

  test('retries: each attempt with its upstream, status and outcome', async () => {
    const id = rid('retry')
    expect((await post(gateway.url, '/v1/chat/completions', open.key, { ...chat(), model: 'flaky/model' }, { 'x-request-id': id })).status).toBe(200)
    const r = await recordOf(gateway.url, id)
    expect(r.attempts.map((a) => [a.upstream, a.status, a.outcome])).toEqual([
      ['flaky', 502, 'upstream_http_error'],
      ['flaky', null, 'ok'],
    ])
    expect(r.attempts[1]!.start_ms).toBeGreaterThanOrEqual(r.attempts[0]!.end_ms!)
  })

  test('fields a target did without are named, as in x-svc-dropped', async () => {
    const id = rid('dropped')
    const response = await post(
      gateway.url,
      '/v1/chat/completions',
      open.key,
      { ...chat(), model: 'claude/model', seed: 7, max_tokens: 20 },
      { 'x-request-id': id },
    )
    expect(response.headers.get('x-svc-dropped')).toBe('seed')
    expect((await recordOf(gateway.url, id)).dropped).toEqual(['seed'])
  })

  test('messages, responses and its sub-routes, embeddings, count_tokens, Gemini', async () => {
    const calls: [string, string, () => Promise<Response>][] = []
    const add = (api: string, route: string, send: (id: string) => Promise<Response>) => {
      const id = rid(api)
      calls.push([id, `${api} ${route}`, () => send(id)])
    }
    const h = (id: string) => ({ 'x-request-id': id })
    add('messages', '/v1/messages', (id) =>
      post(gateway.url, '/v1/messages', open.key, { model: 'local/echo', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }, h(id)),
    )
    add('count_tokens', '/v1/messages/count_tokens', (id) =>
      post(gateway.url, '/v1/messages/count_tokens', open.key, { model: 'local/echo', messages: [{ role: 'user', content: 'hi' }] }, h(id)),
    )
    add('embeddings', '/v1/embeddings', (id) => post(gateway.url, '/v1/embeddings', open.key, { model: 'local/embed', input: 'words' }, h(id)))
    add('responses.input_tokens', '/v1/responses/input_tokens', (id) =>
      post(gateway.url, '/v1/responses/input_tokens', open.key, { model: 'local/echo', input: 'hi' }, h(id)),
    )
    add('gemini.generateContent', '/v1beta/models/:prefix/:action', (id) =>
      post(gateway.url, '/v1beta/models/local/echo:generateContent', open.key, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }, h(id)),
    )
    add('gemini.countTokens', '/v1beta/models/:prefix/:action', (id) =>
      post(gateway.url, '/v1beta/models/local/echo:countTokens', open.key, { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }, h(id)),
    )
    for (const [, what, send] of calls) expect(`${what} ${(await send()).status}`).toBe(`${what} 200`)

    const created = rid('responses')
    const response = await post(gateway.url, '/v1/responses', open.key, { model: 'local/echo', input: 'remember' }, h(created))
    const stored = (await response.json()) as { id: string }
    const auth = { authorization: `Bearer ${open.key}` }
    const get = rid('responses-get')
    const items = rid('responses-items')
    const removed = rid('responses-delete')
    expect((await fetch(`${gateway.url}/v1/responses/${stored.id}`, { headers: { ...auth, ...h(get) } })).status).toBe(200)
    expect((await fetch(`${gateway.url}/v1/responses/${stored.id}/input_items`, { headers: { ...auth, ...h(items) } })).status).toBe(200)
    expect((await fetch(`${gateway.url}/v1/responses/${stored.id}`, { method: 'DELETE', headers: { ...auth, ...h(removed) } })).status).toBe(200)
    calls.push([created, 'responses /v1/responses', async () => response])
    calls.push([get, 'responses /v1/responses/:id', async () => response])
    calls.push([items, 'responses /v1/responses/:id/input_items', async () => response])
    calls.push([removed, 'responses /v1/responses/:id', async () => response])

    for (const [id, what] of calls) {
      const r = await recordOf(gateway.url, id)
      expect(`${r.api} ${r.route} ${r.status} ${r.key_id}`).toBe(`${what} 200 ${open.id}`)
    }
    expect((await recordOf(gateway.url, created)).response_id).toBe(stored.id)
  })
})

describe('refused requests', () => {
  test('400, 404, 413-sized and 429 are recorded with their error; 401 is not', async () => {
    const malformed = rid('malformed')
    const unknown = rid('unknown-model')
    const limited = rid('limited')
    const unauthorized = rid('unauthorized')
    expect((await post(gateway.url, '/v1/chat/completions', open.key, '{"model":', { 'x-request-id': malformed })).status).toBe(400)
    expect((await post(gateway.url, '/v1/chat/completions', open.key, { ...chat(), model: 'nope/none' }, { 'x-request-id': unknown })).status).toBe(404)
    expect((await post(gateway.url, '/v1/chat/completions', tight.key, chat())).status).toBe(200)
    expect((await post(gateway.url, '/v1/chat/completions', tight.key, chat(), { 'x-request-id': limited })).status).toBe(429)
    expect((await post(gateway.url, '/v1/chat/completions', 'sk-cg-not-a-key', chat(), { 'x-request-id': unauthorized })).status).toBe(401)

    expect(await recordOf(gateway.url, malformed)).toMatchObject({ status: 400, error_type: 'invalid_request_error', key_id: open.id, api: 'chat.completions' })
    expect(await recordOf(gateway.url, unknown)).toMatchObject({ status: 404, error_type: 'not_found_error', alias: null })
    const refusal = await recordOf(gateway.url, limited)
    expect(refusal).toMatchObject({ status: 429, error_type: 'rate_limit_error', key_id: tight.id, tier: 'tight', alias: 'local/echo', attempts: [] })
    expect(refusal.error_message).toContain('per minute')
    const missing = await admin(gateway.url, `/admin/requests/${unauthorized}`)
    expect(missing.status).toBe(404)
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('request_not_found')
  })

  test('requests that are not to an inbound API (models, admin, health) leave no record', async () => {
    const id = rid('models')
    expect((await fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${open.key}`, 'x-request-id': id } })).status).toBe(200)
    expect((await admin(gateway.url, `/admin/requests/${id}`)).status).toBe(404)
  })
})

describe('GET /admin/requests', () => {
  test('filters: key, alias, upstream, status code or class, error type, since and until', async () => {
    const mark = Date.now()
    const mine = await createKey(gateway.url, 'open')
    await post(gateway.url, '/v1/chat/completions', mine.key, chat())
    await post(gateway.url, '/v1/chat/completions', mine.key, { ...chat(), model: 'flaky/model' })
    await post(gateway.url, '/v1/chat/completions', mine.key, { ...chat(), model: 'nope/none' })
    const byKey = await everyRecord(gateway.url, `key_id=${mine.id}`)
    expect(byKey.map((r) => r.status)).toEqual([404, 200, 200])
    expect((await everyRecord(gateway.url, `key_id=${mine.id}&alias=flaky/model`)).map((r) => r.upstream)).toEqual(['flaky'])
    expect((await everyRecord(gateway.url, `key_id=${mine.id}&upstream=local`)).map((r) => r.alias)).toEqual(['local/echo'])
    expect(await everyRecord(gateway.url, `key_id=${mine.id}&status=4xx`)).toHaveLength(1)
    expect(await everyRecord(gateway.url, `key_id=${mine.id}&status=404`)).toHaveLength(1)
    expect(await everyRecord(gateway.url, `key_id=${mine.id}&status=5xx`)).toHaveLength(0)
    expect((await everyRecord(gateway.url, `key_id=${mine.id}&error_type=not_found_error`)).map((r) => r.status)).toEqual([404])
    const since = new Date(mark).toISOString()
    expect(await everyRecord(gateway.url, `key_id=${mine.id}&since=${since}`)).toHaveLength(3)
    expect(await everyRecord(gateway.url, `key_id=${mine.id}&until=${mark - 1}`)).toHaveLength(0)
  })

  test('bad filters are a 400 naming the parameter', async () => {
    for (const [query, param] of [
      ['status=6xx', 'status'],
      ['status=abc', 'status'],
      ['since=yesterday', 'since'],
      ['cursor=bm9wZQ', 'cursor'],
    ]) {
      const response = await admin(gateway.url, `/admin/requests?${query}`)
      expect(`${query} ${response.status}`).toBe(`${query} 400`)
      expect(((await response.json()) as { error: { param: string } }).error.param).toBe(param!)
    }
    expect((await admin(gateway.url, '/admin/requests?limit=0')).status).toBe(400)
    expect((await fetch(`${gateway.url}/admin/requests`)).status).toBe(401)
  })

  test('pages neither skip nor repeat a record while new ones are written', async () => {
    const writer = await createKey(gateway.url, 'open')
    for (let i = 0; i < 40; i++)
      await post(gateway.url, '/v1/chat/completions', writer.key, chat(`before ${i}`), { 'x-request-id': `before-${writer.id}-${i}` })
    // Newest first, 7 a page, while the same key keeps sending requests between the pages.
    let writing = true
    let sent = 0
    const more = (async () => {
      while (writing) await post(gateway.url, '/v1/chat/completions', writer.key, chat(`during ${sent++}`), { 'x-request-id': `during-${writer.id}-${sent}` })
    })()
    const seen: string[] = []
    let cursor: string | null = null
    try {
      do {
        const next = await page(gateway.url, `key_id=${writer.id}&limit=7${cursor ? `&cursor=${cursor}` : ''}`)
        seen.push(...next.data.map((r) => r.id))
        cursor = next.next_cursor
        expect(next.data.length).toBeLessThanOrEqual(7)
      } while (cursor !== null)
    } finally {
      writing = false
      await more
    }
    expect(sent).toBeGreaterThan(0)
    expect(new Set(seen).size).toBe(seen.length)
    const before = seen.filter((id) => id.startsWith('before-'))
    expect(before).toEqual(Array.from({ length: 40 }, (_, i) => `before-${writer.id}-${39 - i}`))
  })
})
