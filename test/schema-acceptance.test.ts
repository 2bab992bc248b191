import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import fc from 'fast-check'
import { fixture, schemaErrors } from './support/fixtures'
import { inProcessGateway, type InProcessGateway, tempDir, writeConfig } from './support/gateway'
import { setup, teardown, TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

/**
 * Every request body that OpenAI's published schema (CreateChatCompletionRequest, vendored in
 * test/fixtures/openai/chat-schemas.json) accepts, the gateway accepts too: the published examples,
 * and bodies generated at random and kept only when the schema says they are valid.
 */

const text = fc.string({ maxLength: 12 })
const textPart = fc.record({ type: fc.constant('text'), text })
const imagePart = fc.record({
  type: fc.constant('image_url'),
  image_url: fc.record(
    { url: fc.constantFrom('https://example.com/a.png', 'data:image/png;base64,iVBORw0KGgo='), detail: fc.constantFrom('auto', 'low', 'high') },
    { requiredKeys: ['url'] },
  ),
})
const audioPart = fc.record({
  type: fc.constant('input_audio'),
  input_audio: fc.record({ data: fc.base64String({ maxLength: 12 }), format: fc.constantFrom('wav', 'mp3') }),
})
const filePart = fc.record({
  type: fc.constant('file'),
  file: fc.record(
    { file_data: fc.constant('data:application/pdf;base64,JVBERi0='), file_id: fc.constant('file-abc'), filename: fc.constant('a.pdf') },
    { requiredKeys: [] },
  ),
})
const toolCall = fc.record({
  id: fc.stringMatching(/^call_[a-z0-9]{1,8}$/),
  type: fc.constant('function'),
  function: fc.record({ name: fc.stringMatching(/^[a-z_]{1,10}$/), arguments: fc.constantFrom('{}', '{"a":1}', '') }),
})
const message = fc.oneof(
  fc.record(
    { role: fc.constantFrom('system', 'developer'), content: fc.oneof(text, fc.array(textPart, { minLength: 1, maxLength: 2 })), name: text },
    { requiredKeys: ['role', 'content'] },
  ),
  fc.record(
    {
      role: fc.constant('user'),
      content: fc.oneof(text, fc.array(fc.oneof(textPart, imagePart, audioPart, filePart), { minLength: 1, maxLength: 4 })),
      name: text,
    },
    { requiredKeys: ['role', 'content'] },
  ),
  fc.record(
    {
      role: fc.constant('assistant'),
      content: fc.oneof(text, fc.constant(null), fc.array(fc.oneof(textPart, fc.record({ type: fc.constant('refusal'), refusal: text })), { maxLength: 2 })),
      refusal: fc.oneof(text, fc.constant(null)),
      tool_calls: fc.array(toolCall, { minLength: 1, maxLength: 2 }),
      name: text,
    },
    { requiredKeys: ['role'] },
  ),
  fc.record({ role: fc.constant('tool'), tool_call_id: text, content: fc.oneof(text, fc.array(textPart, { minLength: 1, maxLength: 2 })) }),
)
const tool = fc.record({
  type: fc.constant('function'),
  function: fc.record(
    { name: fc.stringMatching(/^[a-z_]{1,10}$/), description: text, parameters: fc.constant({ type: 'object', properties: {} }), strict: fc.boolean() },
    { requiredKeys: ['name'] },
  ),
})
const body = fc.record(
  {
    messages: fc.array(message, { minLength: 1, maxLength: 5 }),
    temperature: fc.oneof(fc.double({ min: 0, max: 2, noNaN: true }), fc.constant(null)),
    top_p: fc.oneof(fc.double({ min: 0, max: 1, noNaN: true }), fc.constant(null)),
    max_tokens: fc.oneof(fc.integer({ min: 1, max: 4096 }), fc.constant(null)),
    max_completion_tokens: fc.oneof(fc.integer({ min: 1, max: 4096 }), fc.constant(null)),
    n: fc.oneof(fc.integer({ min: 1, max: 3 }), fc.constant(null)),
    seed: fc.oneof(fc.integer(), fc.constant(null)),
    stop: fc.oneof(text, fc.array(text, { minLength: 1, maxLength: 4 }), fc.constant(null)),
    stream: fc.oneof(fc.boolean(), fc.constant(null)),
    stream_options: fc.oneof(fc.record({ include_usage: fc.boolean() }), fc.constant(null)),
    tools: fc.array(tool, { minLength: 1, maxLength: 2 }),
    tool_choice: fc.constantFrom('none', 'auto', 'required'),
    parallel_tool_calls: fc.boolean(),
    response_format: fc.oneof(fc.constant({ type: 'text' }), fc.constant({ type: 'json_object' })),
    reasoning_effort: fc.constantFrom('low', 'medium', 'high'),
    logprobs: fc.oneof(fc.boolean(), fc.constant(null)),
    presence_penalty: fc.oneof(fc.double({ min: -2, max: 2, noNaN: true }), fc.constant(null)),
    frequency_penalty: fc.oneof(fc.double({ min: -2, max: 2, noNaN: true }), fc.constant(null)),
    user: text,
    store: fc.oneof(fc.boolean(), fc.constant(null)),
    metadata: fc.oneof(fc.dictionary(fc.stringMatching(/^[a-z]{1,8}$/), text, { maxKeys: 2 }), fc.constant(null)),
  },
  { requiredKeys: ['messages'] },
)

describe("every body OpenAI's published schema accepts is accepted", () => {
  const dir = tempDir()
  let gw: InProcessGateway
  setup(async () => {
    const config = writeConfig(
      dir.path,
      `
[tiers.t]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 64
[upstreams.local]
kind = "mock"
[aliases."local/echo"]
targets = [{ upstream = "local", model = "echo" }]
`,
    )
    gw = await inProcessGateway({ env: { GATEWAY_CONFIG: config } })
  })
  teardown(() => {
    gw.close()
    dir[Symbol.dispose]()
  })

  const send = async (request: Record<string, unknown>) => {
    const response = await gw.request('/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.key}` },
      body: JSON.stringify({ ...request, model: 'local/echo' }),
    })
    const answer = await response.text()
    return { status: response.status, answer }
  }

  test('the published examples and the fixtures built from the schema', async () => {
    for (const path of ['openai/request-vision.json', 'openai/request-tools.json', 'openai/request-tool-loop.json', 'openai/request-every-field.json']) {
      const { request } = fixture(path)
      // The every-field fixture's seed is past the schema's maximum on purpose (a precision test); the rest of it is valid.
      if (path !== 'openai/request-every-field.json') expect(`${path}: ${schemaErrors('CreateChatCompletionRequest', request)}`).toBe(`${path}: null`)
      const { status, answer } = await send(request)
      expect(`${path}: ${status}`).toBe(`${path}: 200`)
      expect(answer.length).toBeGreaterThan(0)
    }
  })

  test('random bodies the schema accepts: never refused (fixed seed, 400 runs)', async () => {
    let valid = 0
    await fc.assert(
      fc.asyncProperty(body, async (candidate) => {
        const request = { model: 'gpt-4o', ...candidate }
        if (schemaErrors('CreateChatCompletionRequest', request) !== null) return
        valid++
        const { status, answer } = await send(request)
        expect(`${status} ${answer.slice(0, 300)}`).toStartWith('200')
      }),
      { seed: 20261123, numRuns: 400, endOnFailure: true },
    )
    // Most candidates are valid: the generator follows the schema closely.
    expect(valid).toBeGreaterThan(200)
  })
})
