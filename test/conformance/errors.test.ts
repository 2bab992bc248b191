/**
 * Every OpenAI-shaped error body, on every route and status the gateway answers with one, validated
 * against the published document's ErrorResponse (whose Error requires `type`, `message`, `param`
 * and `code`, the last two string or null), with `param` and `code` present as members, never left
 * out. An upstream's own 4xx keeps its `param` and `code`. The Messages route answers in Anthropic's
 * shape and the Gemini-native routes in Google's, which OpenAI's document does not describe.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { ADMIN_KEY, createKey } from '../support/cluster'
import { tempDir, writeConfig } from '../support/gateway'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { chatChunks, expectConforms, startCounting } from './conforms'
import { type Faulty, faultyUpstream, UPSTREAM_400 } from './faulty-upstream'

setDefaultTimeout(TEST_MS)

let validatedCount = () => 0

const config = (faulty: string) => `
[tiers.open]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 1000

[tiers.tight]
requests_per_minute = 1
tokens_per_minute = 100000000
max_concurrent = 1000

[tiers.narrow]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 1000
models = ["e/ok"]

[upstreams.mock]
kind = "mock"

[upstreams.faulty]
kind = "openai"
base_url = "${faulty}"
api_key_env = "FAULTY_KEY"
max_retries = 0
failure_threshold = 1000

[upstreams.slow]
kind = "openai"
base_url = "${faulty}"
api_key_env = "FAULTY_KEY"
max_retries = 0
connect_timeout_ms = 1000
timeout_ms = 1000
failure_threshold = 1000

[upstreams.breaker]
kind = "openai"
base_url = "${faulty}"
api_key_env = "FAULTY_KEY"
max_retries = 0
failure_threshold = 1
cooldown_ms = 3600000

[aliases."e/ok"]
targets = [{ upstream = "mock", model = "echo" }]

[aliases."e/embed"]
targets = [{ upstream = "mock", model = "embed" }]

[aliases."e/faulty"]
targets = [{ upstream = "faulty", model = "gpt-faulty" }]

# A 429 with retry-after rests its target (upstream and model): the rate-limited case has a target of its own.
[aliases."e/limited"]
targets = [{ upstream = "faulty", model = "gpt-limited" }]

[aliases."e/slow"]
targets = [{ upstream = "slow", model = "gpt-slow" }]

[aliases."e/breaker"]
targets = [{ upstream = "breaker", model = "gpt-breaker" }]
`

const dir = tempDir('chatgate-conformance-errors-')
let gateway: GatewayProcess
let faulty: Faulty
let key: string

setup(async () => {
  validatedCount = startCounting()
  faulty = faultyUpstream()
  gateway = await spawnGateway({
    GATEWAY_DB: `${dir.path}/gateway.sqlite`,
    GATEWAY_CONFIG: writeConfig(dir.path, config(faulty.url)),
    GATEWAY_ADMIN_KEY: ADMIN_KEY,
    FAULTY_KEY: 'sk-faulty',
  })
  key = (await createKey(gateway.url, { name: 'errors', tier: 'open' })).key
})
teardown(async () => {
  console.log(`conformance/errors: ${validatedCount()} error bodies validated against the OpenAPI document`)
  await gateway?.stop()
  faulty?.stop()
  dir[Symbol.dispose]()
})

type Init = { method?: string; body?: string; headers?: Record<string, string>; as?: string | null }

const call = (path: string, { method = 'POST', body, headers = {}, as = key }: Init = {}) =>
  fetch(`${gateway.url}${path}`, {
    method,
    headers: { ...(as === null ? {} : { authorization: `Bearer ${as}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body,
  })

/**
 * The error answer of `response`: its status as expected, its body an ErrorResponse of the
 * document with `param` and `code` written out (null or a string), and its `error`, for more.
 */
async function openaiError(
  response: Response,
  status: number,
  what: string,
): Promise<{ message: string; type: string; param: string | null; code: string | null }> {
  const text = await response.text()
  expect({ what, status: response.status }).toEqual({ what, status })
  expect({ what, json: response.headers.get('content-type')?.startsWith('application/json') }).toEqual({ what, json: true })
  const body = JSON.parse(text)
  expectConforms('ErrorResponse', body, what)
  expect({ what, members: Object.keys(body.error).sort() }).toEqual({ what, members: ['code', 'message', 'param', 'type'] })
  return body.error
}

/** The routes that take a body with a `model`, and a valid body for each (`model` and text given). */
const MODEL_ROUTES: Record<string, (model: string, text: string) => unknown> = {
  '/v1/chat/completions': (model, text) => ({ model, messages: [{ role: 'user', content: text }] }),
  '/v1/embeddings': (model, text) => ({ model, input: text }),
  '/v1/responses': (model, text) => ({ model, input: text }),
  '/v1/responses/input_tokens': (model, text) => ({ model, input: text }),
}
const POST_ROUTES = Object.keys(MODEL_ROUTES)
const embeddingModel = (route: string, model: string) => (route === '/v1/embeddings' && model === 'e/ok' ? 'e/embed' : model)
const bodyFor = (route: string, model: string, text = 'hello') => JSON.stringify(MODEL_ROUTES[route]!(embeddingModel(route, model), text))

/** Every route on the OpenAI side that takes a key (the model listings are public). */
const EVERY_ROUTE: [string, string][] = [
  ['POST', '/v1/chat/completions'],
  ['POST', '/v1/embeddings'],
  ['POST', '/v1/responses'],
  ['POST', '/v1/responses/input_tokens'],
  ['GET', '/v1/responses/resp_x'],
  ['DELETE', '/v1/responses/resp_x'],
  ['GET', '/v1/responses/resp_x/input_items'],
  ['GET', '/v1/usage'],
  ['GET', '/admin/keys'],
  ['GET', '/admin/usage'],
]

const UNAUTHORIZED = { error: { message: 'Unauthorized', type: 'authentication_error', param: null, code: null } }

describe('401: exactly one body, on every route', () => {
  for (const [method, path] of EVERY_ROUTE)
    for (const [how, as] of [
      ['no key', null],
      ['a wrong key', 'sk-cg-not-a-key'],
    ] as const)
      test(`${method} ${path}, ${how}`, async () => {
        const body = method === 'POST' ? bodyFor(path, 'e/ok') : undefined
        const response = await call(path, { method, body, as })
        const what = `${method} ${path} ${how}`
        const text = await response.text()
        await openaiError(new Response(text, { status: response.status, headers: response.headers }), 401, what)
        expect(text).toBe(JSON.stringify(UNAUTHORIZED))
      })
})

describe('400, 403, 404, 413, 415: the request refused, on every route that takes one', () => {
  for (const route of POST_ROUTES) {
    test(`${route}: malformed JSON, 400`, async () => {
      const error = await openaiError(await call(route, { body: '{"model": ' }), 400, `${route} malformed`)
      expect(error.type).toBe('invalid_request_error')
    })

    test(`${route}: a schema violation, 400 naming the field`, async () => {
      const error = await openaiError(await call(route, { body: JSON.stringify({ model: 42 }) }), 400, `${route} schema`)
      expect(error).toMatchObject({ type: 'invalid_request_error', param: expect.any(String) })
    })

    test(`${route}: an alias the tier may not use, 403`, async () => {
      const narrow = (await createKey(gateway.url, { name: `narrow ${route}`, tier: 'narrow' })).key
      const error = await openaiError(await call(route, { body: bodyFor(route, 'e/faulty'), as: narrow }), 403, `${route} 403`)
      expect(error.type).toBe('permission_error')
    })

    test(`${route}: an unknown alias, 404 model_not_found`, async () => {
      const error = await openaiError(await call(route, { body: bodyFor(route, 'no/such') }), 404, `${route} 404`)
      expect(error).toMatchObject({ type: 'not_found_error', code: 'model_not_found' })
    })

    test(`${route}: a body over the limit, 413`, async () => {
      const body = bodyFor(route, 'e/ok', 'x'.repeat(2 * 1024 * 1024))
      await openaiError(await call(route, { body }), 413, `${route} 413`)
    })

    test(`${route}: not JSON, 415`, async () => {
      const response = await call(route, { body: bodyFor(route, 'e/ok'), headers: { 'content-type': 'text/plain' } })
      await openaiError(response, 415, `${route} 415`)
    })
  }

  test('a query out of range, 400 naming it', async () => {
    const error = await openaiError(await call('/v1/responses/resp_x/input_items?limit=0', { method: 'GET' }), 400, 'input_items limit')
    expect(error.param).toBe('limit')
  })

  test('an unknown route, 404 unknown_route, whatever the method', async () => {
    for (const [method, path] of [
      ['GET', '/v1/nothing'],
      ['POST', '/v1/chat/completion'],
      ['GET', '/v1/responses'],
    ]) {
      const error = await openaiError(await call(path!, { method, body: method === 'POST' ? '{}' : undefined }), 404, `${method} ${path}`)
      expect(error).toMatchObject({ type: 'not_found_error', code: 'unknown_route' })
    }
  })

  test('an unknown model or response by id, 404', async () => {
    await openaiError(await call('/v1/models/no/such', { method: 'GET' }), 404, 'GET /v1/models/no/such')
    for (const [method, path] of [
      ['GET', '/v1/responses/resp_unknown'],
      ['DELETE', '/v1/responses/resp_unknown'],
      ['GET', '/v1/responses/resp_unknown/input_items'],
    ])
      await openaiError(await call(path!, { method }), 404, `${method} ${path}`)
  })
})

describe('429: limits', () => {
  for (const route of POST_ROUTES.filter((r) => r !== '/v1/responses/input_tokens'))
    test(`${route}: over the tier's requests per minute`, async () => {
      const tight = (await createKey(gateway.url, { name: `tight ${route}`, tier: 'tight' })).key
      expect((await call(route, { body: bodyFor(route, 'e/ok'), as: tight })).status).toBe(200)
      const refused = await call(route, { body: bodyFor(route, 'e/ok'), as: tight })
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/)
      const error = await openaiError(refused, 429, `${route} 429`)
      expect(error.type).toBe('rate_limit_error')
    })

  test('an upstream that rate-limits, relayed as 429', async () => {
    const error = await openaiError(await call('/v1/chat/completions', { body: bodyFor('/v1/chat/completions', 'e/limited', '[[429]]') }), 429, 'upstream 429')
    expect(error).toMatchObject({ type: 'rate_limit_error', code: 'upstream_rate_limited' })
  })
})

const UPSTREAM_ROUTES = ['/v1/chat/completions', '/v1/embeddings', '/v1/responses']

describe("the upstream's failures: 4xx passed on, 502, 503, 504", () => {
  for (const route of UPSTREAM_ROUTES)
    for (const stream of route === '/v1/embeddings' ? [false] : [false, true]) {
      const send = (model: string, text: string) => {
        const body = JSON.parse(bodyFor(route, model, text))
        return call(route, { body: JSON.stringify(stream ? { ...body, stream: true } : body) })
      }
      const how = `${route}${stream ? ', streamed' : ''}`

      test(`${how}: an upstream 400 passed on with its own param and code`, async () => {
        const error = await openaiError(await send('e/faulty', '[[400]]'), 400, `${how} upstream 400`)
        expect(error).toEqual({ ...UPSTREAM_400, type: 'invalid_request_error' })
      })

      test(`${how}: an upstream 400 with param and code null keeps param null`, async () => {
        const error = await openaiError(await send('e/faulty', '[[400-null]]'), 400, `${how} upstream 400 nulls`)
        expect(error).toMatchObject({ type: 'invalid_request_error', param: null })
      })

      test(`${how}: an upstream 422 passed on`, async () => {
        await openaiError(await send('e/faulty', '[[422]]'), 422, `${how} upstream 422`)
      })

      test(`${how}: every target failed, 502`, async () => {
        const error = await openaiError(await send('e/faulty', '[[500]]'), 502, `${how} 502`)
        expect(error.type).toBe('upstream_error')
      })

      test(`${how}: the upstream too slow, 504`, async () => {
        const error = await openaiError(await send('e/slow', '[[hang]]'), 504, `${how} 504`)
        expect(error.type).toBe('timeout_error')
      })
    }

  test('no target available (its circuit open), 503 on every route', async () => {
    await openaiError(await call('/v1/chat/completions', { body: bodyFor('/v1/chat/completions', 'e/breaker', '[[500]]') }), 502, 'opening 502')
    for (const route of UPSTREAM_ROUTES) {
      const error = await openaiError(await call(route, { body: bodyFor(route, 'e/breaker') }), 503, `${route} 503`)
      expect(error.type).toBe('overloaded_error')
    }
  })
})

describe('after the first byte: the error chunk of a broken stream', () => {
  test('/v1/chat/completions: the chunks before it are chunks, the last one an ErrorResponse', async () => {
    const body = JSON.parse(bodyFor('/v1/chat/completions', 'e/faulty', '[[cut]]'))
    const response = await call('/v1/chat/completions', { body: JSON.stringify({ ...body, stream: true }) })
    expect(response.status).toBe(200)
    const chunks = chatChunks(await response.text())
    expect(chunks.length).toBe(2)
    expectConforms('CreateChatCompletionStreamResponse', chunks[0], 'the chunk before the break')
    expectConforms('ErrorResponse', chunks[1], 'the error chunk')
    expect(Object.keys(chunks[1].error).sort()).toEqual(['code', 'message', 'param', 'type'])
  })
})

describe('the other dialects keep their own error shapes', () => {
  const anthropicShape = { type: 'error', error: { type: expect.any(String), message: expect.any(String) } }
  const googleShape = { error: { code: expect.any(Number), message: expect.any(String), status: expect.any(String), details: expect.any(Array) } }

  test("/v1/messages: Anthropic's, for a missing key, malformed JSON, an unknown alias and an upstream failure", async () => {
    const messages = (model: string, text: string) => JSON.stringify({ model, max_tokens: 10, messages: [{ role: 'user', content: text }] })
    const cases: [Response, number][] = [
      [await call('/v1/messages', { body: messages('e/ok', 'hi'), as: null }), 401],
      [await call('/v1/messages', { body: '{"model": ' }), 400],
      [await call('/v1/messages', { body: messages('no/such', 'hi') }), 404],
      [await call('/v1/messages', { body: messages('e/faulty', '[[500]]') }), 502],
    ]
    for (const [response, status] of cases) {
      expect(response.status).toBe(status)
      const body = (await response.json()) as { error: object }
      expect(body).toMatchObject(anthropicShape)
      expect(Object.keys(body.error)).not.toContain('param')
    }
  })

  test("/v1beta: Google's, for a missing key, malformed JSON and an unknown alias", async () => {
    const path = (model: string) => `/v1beta/models/${model}:generateContent`
    const body = JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] })
    const cases: [Response, number][] = [
      [await call(path('e/ok'), { body, as: null }), 401],
      [await call(path('e/ok'), { body: '{"contents": ' }), 400],
      [await call(path('no/such'), { body }), 404],
    ]
    for (const [response, status] of cases) {
      expect(response.status).toBe(status)
      const answer = (await response.json()) as { error: { code: number } }
      expect(answer).toMatchObject(googleShape)
      expect({ status: response.status, code: answer.error.code }).toEqual({ status, code: status })
    }
  })
})
