/**
 * kind = "bedrock" on a real gateway process, against the fake Bedrock runtime of
 * test/support/fakes/bedrock.ts (written from the Converse, ConverseStream, InvokeModel and
 * CountTokens API references and AWS's event-stream encoding, cited there), which checks every
 * SigV4 signature with an independent verifier (test/support/sigv4-verify.ts, from
 * https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html), and
 * the fake Anthropic API for fallbacks. Every inbound API, JSON and streamed; reasoning signatures
 * across turns; stop reasons; CRC failures; errors, retries and fallbacks; usage and spend exact.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { ADMIN_KEY, createKey, usageTotals } from '../../support/cluster'
import { fakeAnthropic, type FakeAnthropic } from '../../support/fakes/anthropic'
import { awsError, BEDROCK_MARKER, FAKE_AWS, FAKE_BEDROCK_API_KEY, fakeBedrock, type FakeBedrock } from '../../support/fakes/bedrock'
import { tempDir, writeConfig } from '../../support/gateway'
import { setup, teardown, TEST_MS } from '../../support/hooks'
import { type GatewayProcess, spawnGateway } from '../../support/process'
import { OPEN_TIER, type SseEvent } from '../../responses/helpers'
import { answer, chatStream, events, type Json, post } from './helpers'

setDefaultTimeout(TEST_MS)

const CLAUDE = 'us.anthropic.claude-sonnet-4-20250514-v1:0'
const SESSION = { ...FAKE_AWS, sessionToken: 'FwoGZXIvYXdzEfake//session+token=' }
const PRICE = 'price = { input = 3, output = 15, cached_input = 0.3, cache_write = 3.75 }'

const config = (aws: string, eu: string, claude: string) => `
${OPEN_TIER}
[tiers.thrifty]
requests_per_minute = 1000
tokens_per_minute = 10000000
max_concurrent = 10
daily_budget_usd = 0.001

[upstreams.aws]
kind = "bedrock"
region = "us-east-1"
base_url = "${aws}"
access_key_id_env = "AWS_AK"
secret_access_key_env = "AWS_SK"
max_retries = 1

[upstreams.aws_eu]
kind = "bedrock"
region = "eu-west-1"
base_url = "${eu}"
access_key_id_env = "AWS_AK"
secret_access_key_env = "AWS_SK"
session_token_env = "AWS_ST"

[upstreams.aws_key]
kind = "bedrock"
region = "us-east-1"
base_url = "${aws}"
api_key_env = "AWS_BEARER"

[upstreams.aws_wrong]
kind = "bedrock"
region = "us-east-1"
base_url = "${aws}"
access_key_id_env = "AWS_AK"
secret_access_key_env = "AWS_WRONG_SK"
max_retries = 3

[upstreams.claude]
kind = "anthropic"
base_url = "${claude}"
api_key_env = "FAKE_ANTHROPIC_KEY"

[aliases."aws/claude"]
targets = [{ upstream = "aws", model = "${CLAUDE}", ${PRICE} }]

[aliases."aws/llama"]
targets = [{ upstream = "aws", model = "meta.llama3-1-70b-instruct-v1:0" }]

[aliases."aws/eu"]
targets = [{ upstream = "aws_eu", model = "eu.anthropic.claude-sonnet-4-20250514-v1:0" }]

[aliases."aws/key"]
targets = [{ upstream = "aws_key", model = "amazon.nova-pro-v1:0" }]

[aliases."aws/wrong"]
targets = [{ upstream = "aws_wrong", model = "${CLAUDE}" }]

[aliases."aws/fallback"]
targets = [{ upstream = "aws_wrong", model = "${CLAUDE}" }, { upstream = "claude", model = "claude-sonnet-4-5" }]

[aliases."aws/mixed"]
targets = [{ upstream = "aws", model = "${CLAUDE}" }, { upstream = "claude", model = "claude-sonnet-4-5" }]

[aliases."aws/titan"]
targets = [{ upstream = "aws", model = "amazon.titan-embed-text-v2:0" }]

[aliases."aws/cohere"]
targets = [{ upstream = "aws", model = "cohere.embed-english-v3" }]
`

const dir = tempDir()
let gateway: GatewayProcess
let aws: FakeBedrock
let eu: FakeBedrock
let claude: FakeAnthropic
let key: string
const seen = new Map<string, number>()

/** Failures the tests ask for, by a marker in the request's text. */
function refuse(call: { text: string }): Response | null {
  if (call.text.includes('[[throttle]]')) return awsError(429, 'ThrottlingException', 'Too many requests, please wait before trying again.')
  if (call.text.includes('[[access-denied]]')) return awsError(403, 'AccessDeniedException', "You don't have access to the model with the specified model ID.")
  if (call.text.includes('[[bedrock-down]]')) return awsError(503, 'ServiceUnavailableException', 'Bedrock is unable to process your request.')
  const once = /\[\[unavailable-once:(\w+)\]\]/.exec(call.text)?.[1]
  if (once && !seen.has(once)) {
    seen.set(once, 1)
    return awsError(503, 'ServiceUnavailableException', 'Bedrock is unable to process your request.')
  }
  return null
}

setup(async () => {
  aws = fakeBedrock({ refuse })
  eu = fakeBedrock({ region: 'eu-west-1', credentials: SESSION })
  claude = fakeAnthropic({ toolInput: () => ({ city: 'Paris' }) })
  gateway = await spawnGateway({
    GATEWAY_DB: `${dir.path}/gateway.sqlite`,
    GATEWAY_CONFIG: writeConfig(dir.path, config(aws.url, eu.url, claude.url)),
    GATEWAY_ADMIN_KEY: ADMIN_KEY,
    AWS_AK: FAKE_AWS.accessKeyId,
    AWS_SK: FAKE_AWS.secretAccessKey,
    AWS_ST: SESSION.sessionToken,
    AWS_WRONG_SK: 'not-the-secret',
    AWS_BEARER: FAKE_BEDROCK_API_KEY,
    FAKE_ANTHROPIC_KEY: 'sk-ant-fake',
  })
  key = (await createKey(gateway.url, { name: 'bedrock', tier: 'open' })).key
})

teardown(async () => {
  await gateway.stop()
  for (const fake of [aws, eu, claude]) fake.stop()
  dir[Symbol.dispose]()
})

const chat = (body: Json) => post(gateway.url, key, '/v1/chat/completions', body)
const user = (content: string) => [{ role: 'user', content }]
const WEATHER = {
  type: 'function',
  function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
}

/** The names in an answer's x-svc-dropped, sorted; [] without the header. */
const droppedOf = (response: Response) =>
  (response.headers.get('x-svc-dropped') ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean)
    .sort()

/** A Messages stream's content blocks, put together from its events as an Anthropic client does. */
function streamedContent(list: SseEvent[]): Json[] {
  const blocks: Json[] = []
  const partial = new Map<number, string>()
  for (const { data } of list) {
    if (data?.type === 'content_block_start') blocks[data.index] = { ...data.content_block }
    if (data?.type !== 'content_block_delta') continue
    const block = blocks[data.index]!
    const delta = data.delta
    if (delta.type === 'text_delta') block.text += delta.text
    else if (delta.type === 'thinking_delta') block.thinking += delta.thinking
    else if (delta.type === 'signature_delta') block.signature += delta.signature
    else if (delta.type === 'input_json_delta') partial.set(data.index, (partial.get(data.index) ?? '') + delta.partial_json)
  }
  for (const [index, json] of partial) blocks[index]!.input = JSON.parse(json)
  return blocks
}

describe('chat completions', () => {
  test('JSON: signed for bedrock in the region, the model id in the path, the answer and its usage exact', async () => {
    const before = aws.accepted.length
    const { status, body, upstream } = await answer(await chat({ model: 'aws/claude', messages: user('hello bedrock') }))
    expect({ status, upstream }).toEqual({ status: 200, upstream: 'aws' })
    expect(body.choices[0].message.content).toBe(`${BEDROCK_MARKER} tool=- user=hello bedrock`)
    const call = aws.accepted[before]!
    expect(call.path).toBe('/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse')
    expect(call.headers.get('authorization')).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIAFAKEBEDROCK00001\/\d{8}\/us-east-1\/bedrock\/aws4_request, /)
    const usage = aws.usages.at(-1)!
    expect(body.usage).toEqual({
      prompt_tokens: usage.inputTokens,
      completion_tokens: usage.outputTokens,
      total_tokens: usage.totalTokens,
      prompt_tokens_details: { cached_tokens: 0 },
    })
  })

  test('streamed: text, the finish reason, and the usage chunk when asked for', async () => {
    const list = await events(await chat({ model: 'aws/llama', messages: user('stream please'), stream: true, stream_options: { include_usage: true } }))
    const stream = chatStream(list)
    expect(stream).toMatchObject({ content: `${BEDROCK_MARKER} tool=- user=stream please`, finish: 'stop', error: null })
    const usage = aws.usages.at(-1)!
    expect(stream.usage).toMatchObject({ prompt_tokens: usage.inputTokens, completion_tokens: usage.outputTokens })
    expect(aws.accepted.at(-1)!.path).toBe('/model/meta.llama3-1-70b-instruct-v1%3A0/converse-stream')
  })

  test("Claude's thinking across a tool loop: its signed reasoning goes back unchanged, JSON and streamed", async () => {
    for (const stream of [false, true]) {
      const first = { model: 'aws/claude', messages: user('Weather in Oslo?'), tools: [WEATHER], reasoning_effort: 'low', stream }
      const turn = stream ? chatStream(await events(await chat(first))) : (await answer(await chat(first))).body.choices[0].message
      const calls = stream ? (turn as ReturnType<typeof chatStream>).calls : (turn as Json).tool_calls
      const thinking = stream ? (turn as ReturnType<typeof chatStream>).thinking : (turn as Json).thinking_blocks
      expect(thinking).toHaveLength(1)
      expect(thinking[0].signature).toStartWith('sig-')
      const call = calls[0]
      const id = call.id
      const second = {
        ...first,
        messages: [
          ...first.messages,
          {
            role: 'assistant',
            content: null,
            thinking_blocks: thinking,
            tool_calls: [{ id, type: 'function', function: { name: 'get_weather', arguments: call.function?.arguments ?? call.arguments } }],
          },
          { role: 'tool', tool_call_id: id, content: 'cold and clear' },
        ],
      }
      const final = stream ? chatStream(await events(await chat(second))).content : (await answer(await chat(second))).body.choices[0].message.content
      expect(final).toBe(`${BEDROCK_MARKER} tool=cold and clear user=-`)
      const sent = aws.accepted.at(-1)!.body.messages[1].content[0]
      expect(sent).toEqual({ reasoningContent: { reasoningText: { text: thinking[0].thinking, signature: thinking[0].signature } } })
    }
  })

  test('x-svc-dropped: what the target leaves out (seed, user), never reasoning_effort on Claude, whose thinking budget it sets', async () => {
    const body = { model: 'aws/claude', messages: user('drop check'), reasoning_effort: 'low', seed: 7, user: 'user-1' }
    for (const stream of [false, true]) {
      const response = await chat({ ...body, stream })
      expect({ status: response.status, dropped: droppedOf(response) }).toEqual({ status: 200, dropped: ['seed', 'user'] })
      await response.text()
      expect(aws.accepted.at(-1)!.body.additionalModelRequestFields).toEqual({ thinking: { type: 'enabled', budget_tokens: 1024 } })
    }
    // A model that does not think: reasoning_effort is left out, and named.
    const llama = await chat({ ...body, model: 'aws/llama' })
    expect({ status: llama.status, dropped: droppedOf(llama) }).toEqual({ status: 200, dropped: ['reasoning_effort', 'seed', 'user'] })
    expect(aws.accepted.at(-1)!.body.additionalModelRequestFields).toBeUndefined()
  })

  test('parallel tool calls, both answered in one turn', async () => {
    const first = await answer(
      await chat({
        model: 'aws/claude',
        messages: user('both [[parallel]]'),
        tools: [WEATHER, { ...WEATHER, function: { ...WEATHER.function, name: 'get_time' } }],
      }),
    )
    const calls = first.body.choices[0].message.tool_calls
    expect(calls.map((c: Json) => c.function.name)).toEqual(['get_weather', 'get_time'])
    expect(first.body.choices[0].finish_reason).toBe('tool_calls')
  })

  test('structured output: the schema as outputConfig, the answer a JSON value of it', async () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }
    const { body } = await answer(
      await chat({ model: 'aws/claude', messages: user('json'), response_format: { type: 'json_schema', json_schema: { name: 'place', schema } } }),
    )
    expect(JSON.parse(body.choices[0].message.content)).toEqual({ city: 'sample city' })
    expect(aws.accepted.at(-1)!.body.outputConfig.textFormat.structure.jsonSchema).toEqual({ schema: JSON.stringify(schema), name: 'place' })
  })

  test('a session token (signed, x-amz-security-token) and a Bedrock API key (Bearer) authenticate too', async () => {
    expect((await answer(await chat({ model: 'aws/eu', messages: user('from eu') }))).status).toBe(200)
    expect(eu.accepted.at(-1)!.headers.get('x-amz-security-token')).toBe(SESSION.sessionToken)
    expect((await answer(await chat({ model: 'aws/key', messages: user('with a key') }))).status).toBe(200)
    expect(aws.accepted.at(-1)!.headers.get('authorization')).toBe(`Bearer ${FAKE_BEDROCK_API_KEY}`)
    expect(eu.refusals).toEqual([])
  })
})

describe('stop reasons in each dialect', () => {
  test('guardrail_intervened and content_filtered: chat content_filter, messages refusal, responses incomplete', async () => {
    for (const reason of ['guardrail_intervened', 'content_filtered']) {
      const text = `[[stop:${reason}]]`
      expect((await answer(await chat({ model: 'aws/claude', messages: user(text) }))).body.choices[0].finish_reason).toBe('content_filter')
      expect(chatStream(await events(await chat({ model: 'aws/claude', messages: user(text), stream: true }))).finish).toBe('content_filter')
      const messages = await answer(await post(gateway.url, key, '/v1/messages', { model: 'aws/claude', max_tokens: 100, messages: user(text) }))
      expect(messages.body.stop_reason).toBe('refusal')
      const responses = await answer(await post(gateway.url, key, '/v1/responses', { model: 'aws/claude', input: text, store: false }))
      expect([responses.body.status, responses.body.incomplete_details]).toEqual(['incomplete', { reason: 'content_filter' }])
    }
  })

  test('max_tokens and stop_sequence', async () => {
    expect((await answer(await chat({ model: 'aws/claude', messages: user('[[stop:max_tokens]]') }))).body.choices[0].finish_reason).toBe('length')
    expect((await answer(await chat({ model: 'aws/claude', messages: user('[[stop:stop_sequence]]') }))).body.choices[0].finish_reason).toBe('stop')
    const messages = await answer(await post(gateway.url, key, '/v1/messages', { model: 'aws/claude', max_tokens: 100, messages: user('[[stop:max_tokens]]') }))
    expect(messages.body.stop_reason).toBe('max_tokens')
  })
})

describe('messages, responses, embeddings, count_tokens', () => {
  test('/v1/messages, JSON and streamed, with a tool call', async () => {
    const body = { model: 'aws/claude', max_tokens: 200, messages: user('Weather?'), tools: [{ name: 'get_weather', input_schema: { type: 'object' } }] }
    const json = await answer(await post(gateway.url, key, '/v1/messages', body))
    expect(json.body.content.map((b: Json) => b.type)).toEqual(['tool_use'])
    expect(json.body.stop_reason).toBe('tool_use')
    const list = await events(await post(gateway.url, key, '/v1/messages', { ...body, tools: undefined, messages: user('stream it'), stream: true }))
    const text = list
      .filter((e) => e.data?.delta?.type === 'text_delta')
      .map((e) => e.data.delta.text)
      .join('')
    expect(text).toBe(`${BEDROCK_MARKER} tool=- user=stream it`)
    expect(list.at(-1)!.event).toBe('message_stop')
    expect(list.find((e) => e.event === 'message_delta')!.data.usage.output_tokens).toBe(aws.usages.at(-1)!.outputTokens)
  })

  test("/v1/messages with thinking, a tool loop on Claude: Bedrock's signed thinking goes back unchanged, first in the turn, JSON and streamed", async () => {
    const tools = [{ name: 'get_weather', description: 'Weather for a city', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }]
    const messages = (body: Json) => post(gateway.url, key, '/v1/messages', body)
    for (const stream of [false, true]) {
      const question = `Weather in Oslo, ${stream ? 'streamed' : 'JSON'}?`
      const first = { model: 'aws/claude', max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024 }, tools, messages: user(question), stream }
      const content: Json[] = stream ? streamedContent(await events(await messages(first))) : (await answer(await messages(first))).body.content
      expect(content.map((b) => b.type)).toEqual(['thinking', 'tool_use'])
      const [thinking, use] = content as [Json, Json]
      // Bedrock's own signature on Claude's reasoning, as the fake issued it (not one the gateway made).
      expect(thinking.thinking).toBe(`thinking about ${question}`)
      expect(thinking.signature).toStartWith('sig-')
      expect(use).toMatchObject({ name: 'get_weather', input: { city: 'Boston' } })
      // The caller sends the assistant turn back as it got it, with the tool's result.
      const second = {
        ...first,
        messages: [
          ...first.messages,
          { role: 'assistant', content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'cold and clear' }] },
        ],
      }
      const final: Json[] = stream ? streamedContent(await events(await messages(second))) : (await answer(await messages(second))).body.content
      expect(final.find((b) => b.type === 'text')?.text).toBe(`${BEDROCK_MARKER} tool=cold and clear user=-`)
      const turn = aws.accepted.at(-1)!.body.messages[1]
      expect(turn.role).toBe('assistant')
      expect(turn.content[0]).toEqual({ reasoningContent: { reasoningText: { text: thinking.thinking, signature: thinking.signature } } })
      expect(turn.content[1]).toEqual({ toolUse: { toolUseId: use.id, name: 'get_weather', input: { city: 'Boston' } } })
    }
    // Without its thinking the turn is refused, as Bedrock refuses it for Claude with thinking enabled.
    const first = await answer(
      await messages({ model: 'aws/claude', max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024 }, tools, messages: user('Weather?') }),
    )
    const use = first.body.content.find((b: Json) => b.type === 'tool_use')
    const refused = await answer(
      await messages({
        model: 'aws/claude',
        max_tokens: 2000,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        tools,
        messages: [
          ...user('Weather?'),
          { role: 'assistant', content: [use] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'cold' }] },
        ],
      }),
    )
    expect([refused.status, refused.body.type, refused.body.error?.type]).toEqual([400, 'error', 'invalid_request_error'])
    expect(refused.body.error.message).toContain('Expected `thinking` or `redacted_thinking`, but found `tool_use`')
  })

  test("/v1/messages: x-svc-dropped names what the translation lost (top_k) and what Bedrock then leaves out (metadata.user_id), by the caller's names", async () => {
    const response = await post(gateway.url, key, '/v1/messages', {
      model: 'aws/claude',
      max_tokens: 2000,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      top_k: 5,
      metadata: { user_id: 'caller-42' },
      messages: user('who am I'),
    })
    expect({ status: response.status, dropped: droppedOf(response) }).toEqual({ status: 200, dropped: ['metadata.user_id', 'top_k'] })
    expect(((await response.json()) as Json).content.map((b: Json) => b.type)).toEqual(['thinking', 'text'])
    const call = aws.accepted.at(-1)!
    expect(call.text).not.toContain('caller-42')
    expect(call.body.additionalModelRequestFields).toEqual({ thinking: { type: 'enabled', budget_tokens: 1024 } })
  })

  test('/v1/responses, JSON and streamed', async () => {
    const json = await answer(await post(gateway.url, key, '/v1/responses', { model: 'aws/llama', input: 'respond', store: false }))
    expect(json.body.output_text ?? json.body.output.at(-1).content[0].text).toBe(`${BEDROCK_MARKER} tool=- user=respond`)
    const list = await events(await post(gateway.url, key, '/v1/responses', { model: 'aws/llama', input: 'respond streamed', stream: true, store: false }))
    expect(list.at(-1)!.data.type).toBe('response.completed')
    expect(list.at(-1)!.data.response.usage.output_tokens).toBe(aws.usages.at(-1)!.outputTokens)
  })

  test('embeddings through /invoke: Titan one text a call, Cohere a list; usage from the token-count header; base64 too', async () => {
    const titan = await answer(await post(gateway.url, key, '/v1/embeddings', { model: 'aws/titan', input: ['one', 'two three'], dimensions: 256 }))
    expect(titan.status).toBe(200)
    expect(titan.body.data.map((d: Json) => [d.index, d.embedding.length])).toEqual([
      [0, 256],
      [1, 256],
    ])
    expect(titan.body.usage).toEqual({ prompt_tokens: 4, total_tokens: 4 })
    expect(titan.body.model).toBe('aws/titan')
    const cohere = await answer(await post(gateway.url, key, '/v1/embeddings', { model: 'aws/cohere', input: 'hello', encoding_format: 'base64' }))
    expect(typeof cohere.body.data[0].embedding).toBe('string')
    expect(Buffer.from(cohere.body.data[0].embedding, 'base64').length).toBe(1024 * 4)
    expect(aws.accepted.at(-1)!.body).toEqual({ texts: ['hello'], input_type: 'search_document', embedding_types: ['float'] })
    expect((await answer(await post(gateway.url, key, '/v1/embeddings', { model: 'aws/claude', input: 'x' }))).status).toBe(400)
  })

  test("count_tokens: Claude through Bedrock's CountTokens, other models with the local tokenizer", async () => {
    const before = aws.accepted.length
    const claudeCount = await answer(await post(gateway.url, key, '/v1/messages/count_tokens', { model: 'aws/claude', messages: user('count me') }))
    expect(claudeCount.status).toBe(200)
    expect(aws.accepted.at(-1)!.path).toBe('/model/anthropic.claude-sonnet-4-20250514-v1%3A0/count-tokens')
    expect(claudeCount.body.input_tokens).toBeGreaterThan(3)
    const llama = await answer(await post(gateway.url, key, '/v1/messages/count_tokens', { model: 'aws/llama', messages: user('count me') }))
    expect(llama.body.input_tokens).toBeGreaterThan(0)
    expect(aws.accepted.length).toBe(before + 1)
  })
})

describe('broken streams, errors, retries and fallbacks', () => {
  test('a message that fails its CRC ends the stream with the error event, after the good events', async () => {
    const stream = chatStream(await events(await chat({ model: 'aws/claude', messages: user('[[crc]] hello'), stream: true })))
    expect(stream.error?.code).toBe('upstream_invalid_response')
    expect(stream.error?.message).toContain('CRC')
    const list = await events(
      await post(gateway.url, key, '/v1/messages', { model: 'aws/claude', max_tokens: 50, messages: user('[[crc]] again'), stream: true }),
    )
    expect(list.at(-1)!.event).toBe('error')
    expect(list.some((e) => e.event === 'message_stop')).toBe(false)
  })

  test('an exception in the stream ends it with the error event', async () => {
    const stream = chatStream(await events(await chat({ model: 'aws/claude', messages: user('[[exception:modelStreamErrorException]] hi'), stream: true })))
    expect(stream.error?.code).toBe('upstream_stream_error')
    expect(stream.content.length).toBeGreaterThan(0)
  })

  test('ThrottlingException → 429 with Retry-After; ValidationException → 400; AccessDeniedException → 502, never retried', async () => {
    const throttled = await answer(await chat({ model: 'aws/llama', messages: user('[[throttle]]') }))
    expect([throttled.status, throttled.body.error.code, throttled.retryAfter]).toEqual([429, 'upstream_rate_limited', '1'])
    const invalid = await answer(await chat({ model: 'aws/claude', messages: [{ role: 'assistant', content: 'I start' }] }))
    expect([invalid.status, invalid.body.error.type]).toEqual([400, 'invalid_request_error'])
    expect(invalid.body.error.message).toContain('must start with a user message')
    const before = aws.accepted.length
    const denied = await answer(await chat({ model: 'aws/claude', messages: user('[[access-denied]]') }))
    expect([denied.status, denied.body.error.code, denied.attempts]).toEqual([502, 'upstream_auth_failed', '1'])
    expect(aws.accepted.length).toBe(before + 1)
  })

  test("a bad signature: Bedrock's 403, never retried on the target; the alias fails over to Anthropic", async () => {
    const before = aws.refusals.length
    const alone = await answer(await chat({ model: 'aws/wrong', messages: user('signed wrong') }))
    expect([alone.status, alone.body.error.code, alone.attempts]).toEqual([502, 'upstream_auth_failed', '1'])
    expect(aws.refusals.slice(before).map((r) => r.type)).toEqual(['InvalidSignatureException'])
    const fallback = await answer(await chat({ model: 'aws/fallback', messages: user('signed wrong, then anthropic') }))
    expect([fallback.status, fallback.upstream, fallback.attempts]).toEqual([200, 'claude', '2'])
  })

  test('ModelNotReady / ServiceUnavailable is retried on the same target', async () => {
    const retried = await answer(await chat({ model: 'aws/claude', messages: user('[[unavailable-once:a]] hi') }))
    expect([retried.status, retried.upstream, retried.attempts]).toEqual([200, 'aws', '2'])
  })

  test('mid-conversation with tool calls: Bedrock serves the call, Anthropic the answer when Bedrock fails', async () => {
    const first = await answer(await chat({ model: 'aws/mixed', messages: user('Weather?'), tools: [WEATHER] }))
    expect(first.upstream).toBe('aws')
    const call = first.body.choices[0].message.tool_calls[0]
    const second = await answer(
      await chat({
        model: 'aws/mixed',
        tools: [WEATHER],
        messages: [
          ...user('Weather?'),
          { role: 'assistant', content: null, tool_calls: [call] },
          { role: 'tool', tool_call_id: call.id, content: 'sunny [[bedrock-down]]' },
        ],
      }),
    )
    expect([second.status, second.upstream]).toEqual([200, 'claude'])
    expect(second.body.choices[0].message.content).toContain('sunny [[bedrock-down]]')
    expect(claude.messageCalls().at(-1)!.body.messages[1].content[0]).toMatchObject({ type: 'tool_use', id: call.id })
  })
})

describe('spend and budgets', () => {
  test('cost from the exact usage, cache reads and writes priced as such; a budget refuses once spent', async () => {
    const thrifty = (await createKey(gateway.url, { name: 'thrifty', tier: 'thrifty' })).key
    const before = await usageTotals(gateway.url)
    const cached = {
      model: 'aws/claude',
      messages: [{ role: 'system', content: [{ type: 'text', text: 'A long system prompt.', cache_control: { type: 'ephemeral' } }] }, ...user('cache me')],
    }
    for (let i = 0; i < 2; i++) expect((await answer(await post(gateway.url, thrifty, '/v1/chat/completions', cached))).status).toBe(200)
    const [write, read] = aws.usages.slice(-2) as [Json, Json]
    expect([write.cacheWriteInputTokens, read.cacheReadInputTokens]).toEqual([100, 100])
    const micro = (u: Json) => u.inputTokens * 3 + (u.cacheReadInputTokens ?? 0) * 0.3 + (u.cacheWriteInputTokens ?? 0) * 3.75 + u.outputTokens * 15
    const after = await usageTotals(gateway.url)
    // USD per million tokens is micro-dollars per token: the cost in nano-dollars is a thousand times that.
    expect(after.cost_usd - before.cost_usd).toBeCloseTo((Math.round(micro(write) * 1000) + Math.round(micro(read) * 1000)) / 1e9, 9)
    expect(after.prompt_tokens - before.prompt_tokens).toBe(write.inputTokens + 100 + read.inputTokens + 100)
    const refused = await answer(await post(gateway.url, thrifty, '/v1/chat/completions', cached))
    expect([refused.status, refused.body.error.code]).toEqual([429, 'budget_exceeded'])
  })
})
