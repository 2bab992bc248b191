import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import OpenAI from 'openai'
import { tempDir, writeConfig } from './support/gateway'
import { type GatewayProcess, spawnGateway } from './support/process'
import { fakeUpstream, type FakeUpstream, type RecordedRequest } from './support/upstream'
import { setup, teardown, TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

/**
 * OpenAI-compatible upstreams get the caller's body as sent, only `model` replaced (and, for a stream,
 * `stream_options.include_usage` set), and the caller gets the upstream's answer as sent, only
 * `model` replaced: proven byte for byte, JSON and streams, with every field and part.
 */

/** A body the gateway has no reason to touch but `model`: every kind of part and field, odd spacing, a huge seed. */
const EVERY_PART_BODY = `{
  "model" : "fake/one",
  "messages": [
    {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
    {"role": "user", "content": [
      {"type": "text", "text": "What is in these?"},
      {"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "high"}},
      {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
      {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
      {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"}},
      {"type": "future_part", "anything": [1, 2, 3]}
    ]},
    {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\\"q\\":\\"cats\\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "cats are mammals"},
    {"role": "assistant", "content": [{"type": "refusal", "refusal": "I cannot do that."}]},
    {"role": "user", "content": "and the model field? {\\"model\\": \\"fake/one\\"}", "name": "ann"}
  ],
  "tools": [{"type": "function", "function": {"name": "lookup", "description": "Look up", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}, "strict": true}}],
  "tool_choice": {"type": "function", "function": {"name": "lookup"}},
  "parallel_tool_calls": false,
  "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": true}},
  "reasoning_effort": "high",
  "seed": 18446744073709551615,
  "temperature": 1.5000,
  "logit_bias": {"50256": -100},
  "logprobs": true,
  "top_logprobs": 2,
  "n": 1,
  "metadata": {"model": "fake/one", "team": "x"},
  "store": false,
  "modalities": ["text"],
  "prediction": {"type": "content", "content": "x"},
  "user": "u-1",
  "max_completion_tokens": 900
}`

/** An upstream answer with every field a gateway is tempted to drop. */
const EVERY_FIELD_ANSWER = `{"id":"chatcmpl-9","object":"chat.completion","created":1700000000,"model":"upstream-model-2026","system_fingerprint":"fp_44709d6fcb","service_tier":"default",
"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"annotations":[{"type":"url_citation","url_citation":{"url":"https://example.com","title":"x","start_index":0,"end_index":1}}],
"tool_calls":[{"id":"call_a","type":"function","function":{"name":"lookup","arguments":"{\\"q\\":\\"a\\"}"}},{"id":"call_b","type":"function","function":{"name":"lookup","arguments":"{\\"q\\":\\"b\\"}"}}],
"reasoning_content":"thought","audio":null},"logprobs":{"content":[{"token":"a","logprob":-0.1,"bytes":[97],"top_logprobs":[]}],"refusal":null},"finish_reason":"tool_calls"}],
"usage":{"prompt_tokens":30,"completion_tokens":12,"total_tokens":42,"prompt_tokens_details":{"cached_tokens":10,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":5,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`

const STREAM_EVENTS = [
  `{"id":"c2","object":"chat.completion.chunk","created":1,"model":"upstream-model-2026","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"lookup","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
  `{"id":"c2","object":"chat.completion.chunk","created":1,"model":"upstream-model-2026","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"lookup","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
  `{"id":"c2","object":"chat.completion.chunk","created":1,"model":"upstream-model-2026","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"q\\":"}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
  `{"id":"c2","object":"chat.completion.chunk","created":1,"model":"upstream-model-2026","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\\"q\\":\\"b\\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
  `{"id":"c2","object":"chat.completion.chunk","created":1,"model":"upstream-model-2026","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\\"a\\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
  `{"id":"c2","object":"chat.completion.chunk","created":1,"model":"upstream-model-2026","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}`,
  `{"id":"c2","object":"chat.completion.chunk","created":1,"model":"upstream-model-2026","system_fingerprint":"fp_1","choices":[],"usage":{"prompt_tokens":30,"completion_tokens":12,"total_tokens":42,"prompt_tokens_details":{"cached_tokens":10}}}`,
]

const sse = (events: string[]) => events.map((e) => `data: ${e}\n\n`).join('') + 'data: [DONE]\n\n'

/** Replaces the top-level "model" value in a JSON text, by hand, for the expected side of a comparison. */
const withModel = (text: string, from: string, to: string) => text.replace(`"model":"${from}"`, `"model":"${to}"`)

describe('OpenAI-compatible upstreams: the body as sent, the answer as sent', () => {
  const dir = tempDir()
  let upstream: FakeUpstream
  let gateway: GatewayProcess
  setup(async () => {
    upstream = fakeUpstream((request: RecordedRequest) =>
      request.body.stream === true
        ? new Response(sse(STREAM_EVENTS), { headers: { 'content-type': 'text/event-stream' } })
        : new Response(EVERY_FIELD_ANSWER, { headers: { 'content-type': 'application/json' } }),
    )
    const config = writeConfig(
      dir.path,
      `
[tiers.main]
requests_per_minute = 1000
tokens_per_minute = 10000000
max_concurrent = 8
[upstreams.fake]
kind = "openai"
base_url = "${upstream.url}"
[aliases."fake/one"]
targets = [{ upstream = "fake", model = "upstream-model" }]
`,
    )
    gateway = await spawnGateway({ GATEWAY_DB: `${dir.path}/gateway.sqlite`, GATEWAY_CONFIG: config }, { expectFirstKey: true })
  })
  teardown(async () => {
    await gateway.stop()
    upstream.stop()
    dir[Symbol.dispose]()
  })

  const post = (body: string) =>
    fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gateway.firstKey}` },
      body,
    })

  test('JSON: the upstream gets every byte but the top-level model; the caller gets every byte but the model', async () => {
    const response = await post(EVERY_PART_BODY)
    expect(response.status).toBe(200)
    const sent = upstream.requests.at(-1)!.text
    expect(sent).toBe(EVERY_PART_BODY.replace('"model" : "fake/one"', '"model" : "upstream-model"'))
    // The seed arrives as the caller wrote it, not as JavaScript would round it.
    expect(sent).toContain('"seed": 18446744073709551615')
    expect(await response.text()).toBe(withModel(EVERY_FIELD_ANSWER, 'upstream-model-2026', 'fake/one'))
  })

  test('stream: include_usage is added to the body and nothing else changes; chunks come back byte for byte, the usage chunk only when asked', async () => {
    const streamed = EVERY_PART_BODY.replace('"max_completion_tokens": 900', '"max_completion_tokens": 900, "stream": true')
    const response = await post(streamed)
    expect(response.status).toBe(200)
    expect(upstream.requests.at(-1)!.text).toBe(
      streamed.replace('"model" : "fake/one"', '"model" : "upstream-model"').replace('{\n  "model"', '{"stream_options":{"include_usage":true},\n  "model"'),
    )
    // Not asked for: the usage chunk and every "usage":null the gateway caused are gone, the rest is as sent.
    const unasked = STREAM_EVENTS.slice(0, -1).map((e) => withModel(e, 'upstream-model-2026', 'fake/one').replace(',"usage":null', ''))
    expect(await response.text()).toBe(sse(unasked))

    // The caller's own stream_options are kept, include_usage turned on inside them.
    const asked = streamed.replace('"stream": true', '"stream": true, "stream_options": {"include_usage": false, "x": 1}')
    const second = await post(asked)
    expect(upstream.requests.at(-1)!.text).toBe(
      asked.replace('"model" : "fake/one"', '"model" : "upstream-model"').replace('"include_usage": false', '"include_usage": true'),
    )
    // The caller said false, and gets no usage chunk; the gateway still counted it.
    expect(await second.text()).toBe(sse(unasked))

    const withUsage = streamed.replace('"stream": true', '"stream": true, "stream_options": {"include_usage": true}')
    const third = await post(withUsage)
    expect(upstream.requests.at(-1)!.text).toBe(withUsage.replace('"model" : "fake/one"', '"model" : "upstream-model"'))
    expect(await third.text()).toBe(sse(STREAM_EVENTS.map((e) => withModel(e, 'upstream-model-2026', 'fake/one'))))
  })

  test('the official openai SDK reads both parallel tool calls from the stream, apart, with their arguments', async () => {
    const client = new OpenAI({ apiKey: gateway.firstKey!, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    const stream = client.chat.completions.stream({ model: 'fake/one', messages: [{ role: 'user', content: 'two lookups' }], stream: true })
    const final = await stream.finalChatCompletion()
    expect(final.choices[0]!.message.tool_calls?.map((c) => (c.type === 'function' ? [c.id, c.function.name, c.function.arguments] : []))).toEqual([
      ['call_a', 'lookup', '{"q":"a"}'],
      ['call_b', 'lookup', '{"q":"b"}'],
    ])
    expect(final.choices[0]!.finish_reason).toBe('tool_calls')
  })
})
