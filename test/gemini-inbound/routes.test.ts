/**
 * The Gemini-native routes at the edge: `POST /v1beta/models/{prefix}/{name}:{method}`, keys in
 * `x-goog-api-key` (never in the query string), Google's error shape on every /v1beta answer, the
 * gateway's headers, limits and usage as on every route. On the mock, in a gateway in this process.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { waitFor } from '../support/wait'
import { ALIASES, type GeminiGateway, sseChunks, startGeminiGateway } from './support'

setDefaultTimeout(TEST_MS)

/** A JSON answer, untyped: the tests read Google's shapes field by field. */
const json = (response: Response): Promise<any> => response.json()

const BODY = { contents: [{ role: 'user', parts: [{ text: 'hello brave new world' }] }] }

describe('the Gemini-native routes', () => {
  let gg: GeminiGateway
  setup(async () => {
    gg = await startGeminiGateway()
  })
  teardown(() => gg?.stop())

  const post = (path: string, headers: Record<string, string> = { 'x-goog-api-key': gg.key }, body: unknown = BODY) =>
    fetch(`${gg.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    })
  const generate = `/v1beta/models/${ALIASES.mock}:generateContent`

  test("generateContent: the answer in Google's shape, modelVersion the alias; the gateway's headers", async () => {
    const response = await post(generate)
    expect(response.status).toBe(200)
    expect(response.headers.get('x-svc-model')).toBe('echo')
    expect(response.headers.get('x-svc-upstream')).toBe('local')
    expect(response.headers.get('x-svc-tier')).toBe('t')
    expect(response.headers.get('x-ratelimit-limit')).toBe('10000')
    const answer = await json(response)
    expect(answer).toMatchObject({
      candidates: [{ content: { role: 'model', parts: [{ text: 'hello brave new world' }] }, finishReason: 'STOP', index: 0 }],
      usageMetadata: { promptTokenCount: 4, candidatesTokenCount: 4, totalTokenCount: 8 },
      modelVersion: ALIASES.mock,
    })
  })

  test('streamGenerateContent?alt=sse: chunks framed as Google frames them, the last with the finish reason and the usage', async () => {
    const response = await post(`/v1beta/models/${ALIASES.mock}:streamGenerateContent?alt=sse`)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toStartWith('text/event-stream')
    const text = await response.text()
    expect(text).toContain('\r\n\r\n')
    const chunks = sseChunks(text)
    expect(chunks.map((c) => c.candidates[0].content.parts.map((p: { text: string }) => p.text).join('')).join('')).toBe('hello brave new world')
    expect(chunks.at(-1)).toMatchObject({ candidates: [{ finishReason: 'STOP' }], usageMetadata: { totalTokenCount: 8 } })
    expect(chunks.slice(0, -1).every((c) => c.candidates[0].finishReason === undefined)).toBe(true)
  })

  test("countTokens: the target counts (the mock in words), in Google's shape", async () => {
    const response = await post(`/v1beta/models/${ALIASES.mock}:countTokens`)
    expect(await json(response)).toEqual({ totalTokens: 4 })
    const wrapped = await post(`/v1beta/models/${ALIASES.mock}:countTokens`, undefined, {
      generateContentRequest: { model: `models/${ALIASES.mock}`, ...BODY },
    })
    expect(await json(wrapped)).toEqual({ totalTokens: 4 })
  })

  test("the key: x-goog-api-key, Authorization: Bearer or x-api-key; missing or wrong is 401 in Google's shape, saying nothing more", async () => {
    expect((await post(generate, { authorization: `Bearer ${gg.key}` })).status).toBe(200)
    expect((await post(generate, { 'x-api-key': gg.key })).status).toBe(200)
    for (const headers of [{}, { 'x-goog-api-key': 'sk-cg-wrong' }] as Record<string, string>[]) {
      const response = await post(generate, headers)
      expect(response.status).toBe(401)
      expect((await json(response)).error).toMatchObject({ code: 401, message: 'Unauthorized', status: 'UNAUTHENTICATED' })
    }
  })

  test('a key in the query string is refused (400, naming it), whatever the headers hold', async () => {
    for (const headers of [{}, { 'x-goog-api-key': gg.key }] as Record<string, string>[]) {
      const response = await post(`${generate}?key=${gg.key}`, headers)
      expect(response.status).toBe(400)
      const { error } = await json(response)
      expect(error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' })
      expect(error.message).toContain('x-goog-api-key')
    }
  })

  test('model names: the slash encoded works; unknown aliases and names without a slash are 404 NOT_FOUND', async () => {
    expect((await post('/v1beta/models/local%2Fecho:generateContent')).status).toBe(200)
    for (const path of ['/v1beta/models/nope/nope:generateContent', '/v1beta/models/gemini-2.5-pro:generateContent']) {
      const response = await post(path)
      expect(response.status).toBe(404)
      const { error } = await json(response)
      expect(error).toMatchObject({ code: 404, status: 'NOT_FOUND' })
      expect(error.message).toContain('GET /v1/models lists the available models')
      expect(error.details[0]).toMatchObject({ reason: 'MODEL_NOT_FOUND' })
    }
  })

  test("unknown methods, a stream without alt=sse, bad bodies: Google's shape, naming the field", async () => {
    const unknown = await post(`/v1beta/models/${ALIASES.mock}:embedContent`)
    expect(unknown.status).toBe(404)
    expect((await json(unknown)).error.status).toBe('NOT_FOUND')
    const get = await fetch(`${gg.url}/v1beta/models/${ALIASES.mock}:generateContent`, { headers: { 'x-goog-api-key': gg.key } })
    expect(get.status).toBe(404)
    expect((await json(get)).error.code).toBe(404)
    const noAlt = await post(`/v1beta/models/${ALIASES.mock}:streamGenerateContent`)
    expect(noAlt.status).toBe(400)
    expect((await json(noAlt)).error.details).toContainEqual({
      '@type': 'type.googleapis.com/google.rpc.BadRequest',
      fieldViolations: [expect.objectContaining({ field: 'alt' })],
    })
    const malformed = await post(generate, undefined, '{"contents": [')
    expect(malformed.status).toBe(400)
    expect(malformed.headers.get('x-svc-tier')).toBe('t')
    expect((await json(malformed)).error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', message: expect.stringContaining('Malformed JSON body') })
    const empty = await post(generate, undefined, { contents: [] })
    expect((await json(empty)).error.details).toContainEqual(expect.objectContaining({ fieldViolations: [expect.objectContaining({ field: 'contents' })] }))
    const wrongType = await fetch(`${gg.url}${generate}`, { method: 'POST', headers: { 'x-goog-api-key': gg.key, 'content-type': 'text/plain' }, body: 'hi' })
    expect(wrongType.status).toBe(415)
    expect((await json(wrongType)).error.status).toBe('INVALID_ARGUMENT')
  })

  test('what a translated target cannot carry is a 400 naming the field; hints it goes without are named in x-svc-dropped', async () => {
    const search = await post(generate, undefined, { ...BODY, tools: [{ googleSearch: {} }] })
    expect(search.status).toBe(400)
    expect((await json(search)).error.message).toContain('googleSearch')
    const hinted = await post(generate, undefined, {
      ...BODY,
      safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }],
      generationConfig: { topK: 3 },
    })
    expect(hinted.status).toBe(200)
    expect(hinted.headers.get('x-svc-dropped')).toBe('safetySettings, generationConfig.topK')
  })

  test('usage: each answered request is counted for the key, like any other route', async () => {
    const report = async () => (await json(await fetch(`${gg.url}/v1/usage`, { headers: { 'x-goog-api-key': gg.key } }))) as { totals: { requests: number } }
    const before = (await report()).totals.requests
    await (await post(generate)).text()
    await (await post(`/v1beta/models/${ALIASES.mock}:streamGenerateContent?alt=sse`)).text()
    await waitFor(async () => (await report()).totals.requests >= before + 2, 'two more requests in the usage report')
  })
})
