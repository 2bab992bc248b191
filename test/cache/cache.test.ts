import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { temporaryBuild } from '../../scripts/build'
import { ROOT, tempDir, writeConfig } from '../support/gateway'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { openapiErrors, streamEventErrors } from '../support/openapi'
import { type GatewayProcess, spawnGateway } from '../support/process'
import type { FakeUpstream } from '../support/upstream'
import { waitFor } from '../support/wait'
import { chatCalls, CONFIG, countingUpstream } from './upstream'

setDefaultTimeout(TEST_MS)

const ADMIN = 'admin-key-for-cache-tests-0123456'

/** The `data:` payloads of an SSE text, [DONE] included as the string. */
const dataOf = (text: string): unknown[] =>
  text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => (line === 'data: [DONE]' ? '[DONE]' : JSON.parse(line.slice(6))))

describe('the exact response cache, on SQLite', () => {
  const dir = tempDir()
  let upstream: FakeUpstream
  let gateway: GatewayProcess
  let key: string
  let env: Record<string, string>

  const post = (path: string, body: unknown, headers: Record<string, string> = {}, as = key) =>
    fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${as}`, ...headers },
      body: JSON.stringify(body),
    })
  const chat = (content: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}, as = key) =>
    post('/v1/chat/completions', { model: 'openai/cached', messages: [{ role: 'user', content }], ...extra }, headers, as)
  const admin = (path: string, body?: unknown) =>
    fetch(`${gateway.url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN}` },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  const newKey = async (tier: string): Promise<string> =>
    ((await (await admin('/admin/keys', { name: `k-${tier}-${Math.random()}`, tier })).json()) as { key: string }).key

  setup(async () => {
    upstream = countingUpstream()
    env = { GATEWAY_DB: `${dir.path}/gateway.sqlite`, GATEWAY_CONFIG: writeConfig(dir.path, CONFIG(upstream.url)), GATEWAY_ADMIN_KEY: ADMIN }
    gateway = await spawnGateway(env)
    key = await newKey('t')
  })
  teardown(async () => {
    await gateway.stop()
    upstream.stop()
    dir[Symbol.dispose]()
  })

  test('a repeat is a hit: no upstream call, x-svc-cache and Age, the same content, valid as a miss is', async () => {
    const before = chatCalls(upstream)
    const miss = await chat('repeat me', { user: 'a' })
    expect(miss.headers.get('x-svc-cache')).toBe('miss')
    const first = (await miss.json()) as any
    // The same request spelled otherwise (members reordered, `user` and `metadata` differ) is the same entry.
    const hit = await post('/v1/chat/completions', {
      messages: [{ content: 'repeat me', role: 'user' }],
      user: 'b',
      metadata: { run: '2' },
      model: 'openai/cached',
    })
    expect(hit.status).toBe(200)
    expect(hit.headers.get('x-svc-cache')).toBe('hit')
    expect(Number(hit.headers.get('age'))).toBeGreaterThanOrEqual(0)
    expect(hit.headers.get('x-svc-cost-usd')).toBe('0')
    const second = (await hit.json()) as any
    expect(second.choices).toEqual(first.choices)
    expect(second.usage).toEqual(first.usage)
    // As valid as the answer it was made from (the fake upstream's own answer leaves out logprobs and refusal).
    expect(openapiErrors('CreateChatCompletionResponse', second)).toBe(openapiErrors('CreateChatCompletionResponse', first))
    expect(chatCalls(upstream)).toBe(before + 1)
    // Another request is another entry.
    expect((await chat('repeat me, but not quite')).headers.get('x-svc-cache')).toBe('miss')
    // An alias without a cache says nothing of one.
    const plain = await post('/v1/chat/completions', { model: 'openai/plain', messages: [{ role: 'user', content: 'repeat me' }] })
    expect(plain.headers.get('x-svc-cache')).toBeNull()
  })

  test('scope key: another key never gets the answer; scope tier: the tier shares it', async () => {
    const other = await newKey('t')
    await chat('mine only')
    expect((await chat('mine only')).headers.get('x-svc-cache')).toBe('hit')
    expect((await chat('mine only', {}, {}, other)).headers.get('x-svc-cache')).toBe('miss')
    const shared = (as: string) => post('/v1/chat/completions', { model: 'openai/shared', messages: [{ role: 'user', content: 'ours' }] }, {}, as)
    expect((await shared(key)).headers.get('x-svc-cache')).toBe('miss')
    expect((await shared(other)).headers.get('x-svc-cache')).toBe('hit')
    expect((await shared(await newKey('small'))).headers.get('x-svc-cache')).toBe('miss')
  })

  test("responses: a tier-mate sending the same item references is never served the first key's answer (its references are to nothing it holds)", async () => {
    const other = await newKey('t')
    const made = (await (await post('/v1/responses', { model: 'openai/shared', input: 'a secret of mine' })).json()) as { output: { id: string }[] }
    const asking = {
      model: 'openai/shared',
      input: [
        { type: 'item_reference', id: made.output[0]!.id },
        { role: 'user', content: 'say it again' },
      ],
      store: false,
    }
    const first = await post('/v1/responses', asking)
    expect(first.status).toBe(200)
    expect(first.headers.get('x-svc-cache')).toBe('miss')
    expect((await post('/v1/responses', asking)).headers.get('x-svc-cache')).toBe('hit')
    // The same text from a key of the same tier: its reference is not to anything it holds.
    const theirs = await post('/v1/responses', asking, {}, other)
    expect(theirs.headers.get('x-svc-cache')).not.toBe('hit')
    expect(theirs.status).toBe(400)
    expect(await theirs.text()).not.toContain('say it again')
  })

  test('regression: a streamed hit carries the headers a JSON hit does, x-svc-latency-ms among them (it had none)', async () => {
    await (await chat('headers alike')).text()
    const json = await chat('headers alike')
    const streamed = await chat('headers alike', { stream: true })
    expect([json.headers.get('x-svc-cache'), streamed.headers.get('x-svc-cache')]).toEqual(['hit', 'hit'])
    const transport = new Set(['content-type', 'cache-control', 'content-length', 'date', 'transfer-encoding', 'connection', 'keep-alive'])
    const names = (response: Response) => [...response.headers.keys()].filter((name) => !transport.has(name)).sort()
    expect(names(streamed)).toEqual(names(json))
    expect(streamed.headers.get('x-svc-latency-ms')).toMatch(/^\d+$/)
    await Promise.all([json.text(), streamed.text()])
  })

  test('chat: a stream after a JSON answer, and JSON after a stream, each in its own form with the original usage', async () => {
    const json = (await (await chat('json first')).json()) as any
    const streamed = await chat('json first', { stream: true, stream_options: { include_usage: true } })
    expect(streamed.headers.get('x-svc-cache')).toBe('hit')
    expect(streamed.headers.get('content-type')).toContain('text/event-stream')
    const events = dataOf(await streamed.text())
    expect(events.at(-1)).toBe('[DONE]')
    const chunks = events.slice(0, -1) as any[]
    for (const chunk of chunks) expect(openapiErrors('CreateChatCompletionStreamResponse', chunk)).toBeNull()
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe(json.choices[0].message.content)
    expect(chunks.at(-1).usage).toEqual(json.usage)

    const before = chatCalls(upstream)
    const live = await (await chat('stream first', { stream: true })).text()
    expect(dataOf(live).at(-1)).toBe('[DONE]')
    const fromStream = await waitFor(async () => {
      const response = await chat('stream first')
      return response.headers.get('x-svc-cache') === 'hit' && ((await response.json()) as any)
    }, 'the streamed answer kept')
    expect(fromStream.choices[0].message.content).toBe('answer to stream first')
    expect(fromStream.usage).toEqual({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 })
    expect(openapiErrors('CreateChatCompletionResponse', fromStream)).toBeNull()
    expect(chatCalls(upstream)).toBe(before + 1)
  })

  test('chat: streamed hits on one entry are each in the form their request asks (the stream made once per form is not served to the other)', async () => {
    await (await chat('forms')).text()
    const withUsage = await (await chat('forms', { stream: true, stream_options: { include_usage: true } })).text()
    const without = await chat('forms', { stream: true })
    expect(without.headers.get('x-svc-cache')).toBe('hit')
    const plain = dataOf(await without.text())
    expect(plain.at(-1)).toBe('[DONE]')
    expect((plain.slice(0, -1) as any[]).some((chunk) => chunk.usage)).toBe(false)
    const again = await (await chat('forms', { stream: true, stream_options: { include_usage: true } })).text()
    expect(again).toBe(withUsage)
    expect((dataOf(again).slice(0, -1) as any[]).at(-1).usage).toEqual({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 })
  })

  test('messages: JSON and stream both ways; a streamed hit ends with message_stop and carries the usage', async () => {
    const body = (stream: boolean, text: string) => ({ model: 'openai/cached', max_tokens: 100, stream, messages: [{ role: 'user', content: text }] })
    const json = (await (await post('/v1/messages', body(false, 'hi claude'))).json()) as any
    const hit = await post('/v1/messages', body(true, 'hi claude'))
    expect(hit.headers.get('x-svc-cache')).toBe('hit')
    const events = dataOf(await hit.text()) as any[]
    expect(events[0].type).toBe('message_start')
    expect(events.at(-1).type).toBe('message_stop')
    const text = events
      .filter((e) => e.type === 'content_block_delta')
      .map((e) => e.delta.text)
      .join('')
    expect(text).toBe(json.content[0].text)
    expect(events.find((e) => e.type === 'message_delta').usage).toMatchObject({ input_tokens: 11, output_tokens: 7 })

    await (await post('/v1/messages', body(true, 'stream claude'))).text()
    const fromStream = await waitFor(async () => {
      const response = await post('/v1/messages', body(false, 'stream claude'))
      return response.headers.get('x-svc-cache') === 'hit' && ((await response.json()) as any)
    }, 'the streamed message kept')
    expect(fromStream).toMatchObject({
      type: 'message',
      role: 'assistant',
      content: [{ type: 'text', text: 'answer to stream claude' }],
      stop_reason: 'end_turn',
    })
    expect(fromStream.usage).toMatchObject({ input_tokens: 11, output_tokens: 7 })
  })

  test('responses: a streamed hit ends with response.completed carrying the usage; a stored hit is a response of its own', async () => {
    const body = (stream: boolean, store?: boolean) => ({ model: 'openai/cached', input: 'hi responses', store, stream })
    const json = (await (await post('/v1/responses', body(false, false))).json()) as any
    const hit = await post('/v1/responses', body(true, false))
    expect(hit.headers.get('x-svc-cache')).toBe('hit')
    const events = dataOf(await hit.text()) as any[]
    for (const event of events) expect(streamEventErrors(event)).toBeNull()
    const done = events.at(-1)
    expect(done.type).toBe('response.completed')
    expect(done.response.output[0].content[0].text).toBe(json.output[0].content[0].text)
    expect(done.response.usage).toMatchObject({ input_tokens: 11, output_tokens: 7 })
    const again = await post('/v1/responses', body(false, false))
    expect(again.headers.get('x-svc-cache')).toBe('hit')
    expect(openapiErrors('Response', await again.json())).toBeNull()

    // Stored (the default): each hit is kept under an id of its own, which previous_response_id and GET find.
    const first = (await (await post('/v1/responses', body(false))).json()) as any
    const stored = await post('/v1/responses', body(false))
    expect(stored.headers.get('x-svc-cache')).toBe('hit')
    const second = (await stored.json()) as any
    expect(second.id).not.toBe(first.id)
    expect(second.output[0].content[0].text).toBe(first.output[0].content[0].text)
    const fetched = await fetch(`${gateway.url}/v1/responses/${second.id}`, { headers: { authorization: `Bearer ${key}` } })
    expect(fetched.status).toBe(200)
    expect(((await fetched.json()) as any).output[0].content[0].text).toBe(first.output[0].content[0].text)
    const next = await post('/v1/responses', { model: 'openai/cached', input: 'and then?', previous_response_id: second.id })
    expect(next.status).toBe(200)
    const sent = upstream.requests.at(-1)!.body.messages as { content: unknown }[]
    expect(JSON.stringify(sent)).toContain('answer to')
  })

  test('embeddings are cached', async () => {
    const before = upstream.requests.length
    const embed = () => post('/v1/embeddings', { model: 'openai/cached', input: 'embed me' })
    const first = (await (await embed()).json()) as any
    const again = await embed()
    expect(again.headers.get('x-svc-cache')).toBe('hit')
    expect(await again.json()).toEqual(first)
    expect(upstream.requests.length).toBe(before + 1)
  })

  test('never cached: a cut upstream stream, an error answer, a tool call unless the alias opts in, an answer over max_entry_bytes', async () => {
    const cut = await (await chat('cut me', { stream: true })).text()
    expect(dataOf(cut)).not.toContain('[DONE]')
    expect((dataOf(cut).at(-1) as any).error.code).toBe('upstream_connection_error')
    const fail = await chat('fail me')
    expect(fail.status).toBeGreaterThanOrEqual(500)
    await chat('call a tool', { tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }] })
    await chat('big answer')
    const before = chatCalls(upstream)
    expect((await chat('cut me', { stream: true })).headers.get('x-svc-cache')).toBe('miss')
    expect((await chat('fail me')).headers.get('x-svc-cache')).toBe('miss')
    expect(
      (await chat('call a tool', { tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }] })).headers.get('x-svc-cache'),
    ).toBe('miss')
    expect((await chat('big answer')).headers.get('x-svc-cache')).toBe('miss')
    expect(chatCalls(upstream)).toBe(before + 4)
    // tool_calls = true keeps them.
    const tools = () => post('/v1/chat/completions', { model: 'openai/tools', messages: [{ role: 'user', content: 'call a tool' }] })
    await tools()
    const hit = await tools()
    expect(hit.headers.get('x-svc-cache')).toBe('hit')
    expect(((await hit.json()) as any).choices[0].message.tool_calls[0].function.name).toBe('lookup')
  })

  test('x-svc-cache: off and no-store bypass, keeping nothing; refresh and no-cache fetch anew and replace the entry', async () => {
    const off = await chat('bypass me', {}, { 'x-svc-cache': 'off' })
    expect(off.headers.get('x-svc-cache')).toBe('bypass')
    expect((await chat('bypass me', {}, { 'cache-control': 'no-store' })).headers.get('x-svc-cache')).toBe('bypass')
    expect((await chat('bypass me')).headers.get('x-svc-cache')).toBe('miss')
    expect((await chat('bypass me')).headers.get('x-svc-cache')).toBe('hit')
    const before = chatCalls(upstream)
    expect((await chat('bypass me', {}, { 'x-svc-cache': 'refresh' })).headers.get('x-svc-cache')).toBe('miss')
    expect((await chat('bypass me', {}, { 'cache-control': 'no-cache' })).headers.get('x-svc-cache')).toBe('miss')
    expect(chatCalls(upstream)).toBe(before + 2)
    const after = await chat('bypass me')
    expect(after.headers.get('x-svc-cache')).toBe('hit')
    expect(Number(after.headers.get('age'))).toBe(0)
  })

  test('a hit is one request with no tokens and no cost: served to a key whose tokens are spent, its saving in the log and metrics', async () => {
    const small = await newKey('small')
    const ask = (content: string) => post('/v1/chat/completions', { model: 'openai/cached', messages: [{ role: 'user', content }] }, {}, small)
    expect((await ask('spend my tokens')).status).toBe(200)
    // 18 tokens of 20 used, and over the limit after one more: a new request is refused, a hit is served.
    expect((await ask('spend more')).status).toBe(200)
    expect((await ask('a new question')).status).toBe(429)
    const hit = await ask('spend my tokens')
    expect(hit.status).toBe(200)
    expect(hit.headers.get('x-svc-cache')).toBe('hit')
    expect(hit.headers.get('x-ratelimit-remaining-tokens')).toBe('0')
    const id = hit.headers.get('x-request-id')!
    const record = await waitFor(async () => {
      const response = await admin(`/admin/requests/${id}`)
      return response.status === 200 && ((await response.json()) as any)
    }, 'the hit in the request log')
    expect(record).toMatchObject({ cache: 'hit', prompt_tokens: 0, completion_tokens: 0 })
    expect(record.cache_saved_usd).toBeGreaterThan(0)
    const metrics = await (await admin('/metrics')).text()
    expect(metrics).toMatch(/chatgate_cache_requests_total\{alias="openai\/cached",result="hit"\} [1-9]/)
    // In usage: the hit is a request with no tokens and no cost, under the upstream (cache), and what it saved is reported.
    const day = new Date().toISOString().slice(0, 10)
    const usage = (await (await fetch(`${gateway.url}/v1/usage?from=${day}&to=${day}`, { headers: { authorization: `Bearer ${small}` } })).json()) as any
    const cached = usage.data.find((row: any) => row.upstream === '(cache)')
    expect(cached).toMatchObject({ requests: 1, prompt_tokens: 0, completion_tokens: 0, cost_usd: 0 })
    expect(cached.cache_saved_usd).toBe(record.cache_saved_usd)
    expect(usage.totals.cache_saved_usd).toBe(record.cache_saved_usd)
    const cli = Bun.spawnSync(['bun', temporaryBuild('cli'), 'usage', '--json', '--key', small.slice(0, 12)], { cwd: ROOT, env: { ...process.env, ...env } })
    expect((JSON.parse(cli.stdout.toString()) as any).totals.cache_saved_usd).toBe(record.cache_saved_usd)
    const series = (await (await admin(`/admin/usage/series?bucket=minute`)).json()) as any
    expect(series.data.reduce((sum: number, point: any) => sum + point.cache_saved_usd, 0)).toBeGreaterThan(0)
    const saved = /chatgate_cache_saved_usd_total\{alias="openai\/cached"\} ([0-9.e-]+)/.exec(metrics)
    expect(Number(saved?.[1])).toBeGreaterThan(0)
  })

  test('an entry lapses after ttl_s: the upstream is asked again', async () => {
    const brief = () => post('/v1/chat/completions', { model: 'openai/brief', messages: [{ role: 'user', content: 'short lived' }] })
    expect((await brief()).headers.get('x-svc-cache')).toBe('miss')
    const before = chatCalls(upstream)
    await waitFor(async () => (await brief()).headers.get('x-svc-cache') === 'miss', 'the entry lapsed (ttl_s = 1)')
    expect(chatCalls(upstream)).toBe(before + 1)
  })

  test('bounded: max_entries keeps the newest (oldest out first)', async () => {
    await chat('oldest entry')
    for (let i = 0; i < 12; i++) await chat(`filler ${i}`)
    expect((await chat(`filler 11`)).headers.get('x-svc-cache')).toBe('hit')
    expect((await chat('oldest entry')).headers.get('x-svc-cache')).toBe('miss')
  })

  test('survives a restart on SQLite', async () => {
    await chat('remember me')
    expect((await chat('remember me')).headers.get('x-svc-cache')).toBe('hit')
    await gateway.stop()
    gateway = await spawnGateway(env)
    const before = chatCalls(upstream)
    const hit = await chat('remember me')
    expect(hit.headers.get('x-svc-cache')).toBe('hit')
    expect(((await hit.json()) as any).choices[0].message.content).toBe('answer to remember me')
    expect(chatCalls(upstream)).toBe(before)
  })
})
