/**
 * Chat completions, embeddings and model listings, validated against OpenAI's published OpenAPI
 * document: every JSON answer against CreateChatCompletionResponse and every stream chunk against
 * CreateChatCompletionStreamResponse, for text, tool calls, parallel tool calls, structured output
 * and reasoning, through a target of every upstream kind; embeddings (float and base64) against
 * CreateEmbeddingResponse; the model list and one model against ListModelsResponse and Model.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { chatChunks, expectConforms, ok200, startCounting } from './conforms'
import { type EveryKind, everyKind } from './upstreams'

setDefaultTimeout(TEST_MS)

let validatedCount = () => 0

let kinds: EveryKind

setup(async () => {
  validatedCount = startCounting()
  kinds = await everyKind()
})
teardown(async () => {
  console.log(`conformance/chat: ${validatedCount()} answers validated against the OpenAPI document`)
  await kinds?.stop()
})

const post = (path: string, body: unknown) =>
  fetch(`${kinds.gateway.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${kinds.key}` },
    body: JSON.stringify(body),
  })

const get = (path: string) => fetch(`${kinds.gateway.url}${path}`, { headers: { authorization: `Bearer ${kinds.key}` } })

const tool = (name: string) => ({
  type: 'function',
  function: { name, description: `${name} for a city`, parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
})
const user = (content: string) => [{ role: 'user', content }]

/** What each scenario asks, and what its answer must show (so a scenario that silently did less fails). */
const SCENARIOS: Record<string, { body: Record<string, unknown>; shows: (message: any) => boolean }> = {
  text: { body: { messages: user('hello conformance') }, shows: (m) => typeof m.content === 'string' && m.content !== '' },
  'tool calls': {
    body: { messages: user('weather in Paris?'), tools: [tool('get_weather')], tool_choice: 'required' },
    shows: (m) => m.tool_calls?.length >= 1,
  },
  'parallel tool calls': {
    body: { messages: user('[[parallel]] weather and time in Paris?'), tools: [tool('get_weather'), tool('get_time')], tool_choice: 'required' },
    shows: (m) => m.tool_calls?.length >= 1,
  },
  'structured output': {
    body: {
      messages: user('a city, as JSON'),
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'city',
          strict: true,
          schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
        },
      },
    },
    shows: (m) => typeof JSON.parse(m.content) === 'object',
  },
  reasoning: { body: { messages: user('think, then answer'), reasoning_effort: 'low' }, shows: (m) => typeof m.content === 'string' },
}

const CHAT_ALIASES = ['k/mock', 'k/openai', 'k/anthropic', 'k/gemini', 'k/vertex', 'k/vertex-claude', 'k/bedrock', 'k/bedrock-nova', 'k/azure']

/** The mock echoes its input: it does not answer structured output with JSON. */
const shown = (model: string, scenario: string) => !(model === 'k/mock' && scenario === 'structured output')

/** A streamed answer's message put together, enough for a scenario's `shows`. */
function assembled(chunks: any[]): any {
  let content: string | null = null
  const calls: any[] = []
  for (const chunk of chunks)
    for (const choice of chunk.choices) {
      if (typeof choice.delta.content === 'string') content = (content ?? '') + choice.delta.content
      for (const call of choice.delta.tool_calls ?? []) calls[call.index] = call
    }
  return { content, tool_calls: calls.length ? calls : undefined }
}

describe('chat completions: JSON and every stream chunk, through every upstream kind', () => {
  for (const model of CHAT_ALIASES)
    for (const [name, scenario] of Object.entries(SCENARIOS)) {
      test(`${model}, ${name}: the JSON answer is a CreateChatCompletionResponse`, async () => {
        const what = `${model} ${name} JSON`
        const completion = await ok200(await post('/v1/chat/completions', { model, ...scenario.body }), what)
        expectConforms('CreateChatCompletionResponse', completion, what)
        if (shown(model, name)) expect({ what, shows: scenario.shows(completion.choices[0].message) }).toEqual({ what, shows: true })
      })

      test(`${model}, ${name}: every chunk of the stream is a CreateChatCompletionStreamResponse`, async () => {
        const what = `${model} ${name} stream`
        const response = await post('/v1/chat/completions', { model, ...scenario.body, stream: true, stream_options: { include_usage: true } })
        expect({ what, status: response.status }).toEqual({ what, status: 200 })
        const chunks = chatChunks(await response.text())
        expect(chunks.length).toBeGreaterThan(1)
        chunks.forEach((chunk, i) => expectConforms('CreateChatCompletionStreamResponse', chunk, `${what} chunk ${i}`))
        expect(chunks.at(-1).usage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) })
        // The document: with include_usage, every chunk before the usage chunk says `"usage": null`.
        expect({ what, usage: chunks.slice(0, -1).map((chunk) => chunk.usage) }).toEqual({ what, usage: chunks.slice(0, -1).map(() => null) })
        if (shown(model, name)) expect({ what, shows: scenario.shows(assembled(chunks)) }).toEqual({ what, shows: true })
      })
    }
})

const EMBEDDING_ALIASES = ['k/mock-embed', 'k/gemini-embed', 'k/vertex-embed', 'k/bedrock-embed', 'k/azure-embed']
/** Those whose vectors the gateway makes itself; Azure's are relayed as its fake sends them (floats, whatever was asked). */
const BASE64_ALIASES = EMBEDDING_ALIASES.filter((alias) => alias !== 'k/azure-embed')

/** A base64 embedding (little-endian float32, as OpenAI sends them) as its floats. */
const floatsOf = (base64: string) => Array.from(new Float32Array(new Uint8Array(Buffer.from(base64, 'base64')).buffer))

describe('embeddings', () => {
  for (const model of EMBEDDING_ALIASES)
    test(`${model}: floats are a CreateEmbeddingResponse`, async () => {
      const body = await ok200(await post('/v1/embeddings', { model, input: ['alpha', 'beta'] }), `${model} float`)
      expectConforms('CreateEmbeddingResponse', body, `${model} float`)
    })

  for (const model of BASE64_ALIASES)
    // The document describes `embedding` as floats only, though OpenAI answers `encoding_format:
    // "base64"` with a string (its API reference says so). So the answer is checked with each
    // string decoded: everything else as the document says, and the same floats as asked plainly.
    test(`${model}: base64 is the same CreateEmbeddingResponse, each vector a base64 string of its floats`, async () => {
      const floats = await ok200(await post('/v1/embeddings', { model, input: ['alpha', 'beta'] }), `${model} float`)
      const body = await ok200(await post('/v1/embeddings', { model, input: ['alpha', 'beta'], encoding_format: 'base64' }), `${model} base64`)
      for (const item of body.data) expect(typeof item.embedding).toBe('string')
      const decoded = { ...body, data: body.data.map((item: any) => ({ ...item, embedding: floatsOf(item.embedding) })) }
      expectConforms('CreateEmbeddingResponse', decoded, `${model} base64`)
      expect(decoded.data.map((item: any) => item.embedding)).toEqual(floats.data.map((item: any) => Array.from(new Float32Array(item.embedding))))
    })
})

describe('model listings', () => {
  test('GET /v1/models is a ListModelsResponse, and each model of it a Model', async () => {
    const list = await ok200(await get('/v1/models'), 'models')
    expectConforms('ListModelsResponse', list, 'models')
    expect(list.data.map((m: any) => m.id)).toEqual(expect.arrayContaining(['k/mock', 'k/anthropic']))
  })

  test('GET /v1/models/{model} is a Model, for every alias', async () => {
    const list = await ok200(await get('/v1/models'), 'models')
    for (const { id } of list.data) expectConforms('Model', await ok200(await get(`/v1/models/${id}`), id), `model ${id}`)
  })
})
