import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { tempDir, writeConfig } from '../support/gateway'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { type FakeUpstream, fakeUpstream, type RecordedRequest } from '../support/upstream'
import { SETUP_MS, setup, teardown, TEARDOWN_MS, TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

// Issue 23, point 8c: a malformed upstream stream event dropped the valid events that came before it
// in the same read (openaiChunks threw mid-batch; anthropicEvents threw before yielding the batch so
// far). Every valid event before the bad one now reaches the caller, then the contract's error
// event, and no [DONE] / message_stop: on chat completions, and on /v1/messages both passed through
// and translated.

const SSE = { 'content-type': 'text/event-stream' }

/** What follows the valid events, chosen by a word in the caller's message. */
const BAD_EVENTS: Record<string, string> = {
  truncated: 'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lost\n\n',
  garbage: 'data: this is not json\n\n',
  error: 'data: {"error":{"message":"upstream broke","type":"server_error"}}\n\n',
  // Braces and a model member pass the cheap shape check; only the relay's parse finds it broken.
  lookalike: 'data: {"id":"chatcmpl-1","model":"gpt-fake","usage": nope}\n\n',
}
const ANTHROPIC_BAD_EVENTS: Record<string, string> = {
  truncated: 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_del\n\n',
  garbage: 'event: content_block_delta\ndata: this is not json\n\n',
  null: 'event: content_block_delta\ndata: null\n\n',
  nodelta: 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0}\n\n',
}
const variantOf = (request: RecordedRequest, variants: Record<string, string>) =>
  Object.keys(variants).find((word) => request.text.includes(`variant-${word}`)) ?? Object.keys(variants)[0]!

/** Valid chunks ("Hello", " world") and then the bad event, all in one write: one read, one batch. */
function openaiUpstream(): FakeUpstream {
  return fakeUpstream((request) => {
    const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'gpt-fake' }
    const chunks = [{ role: 'assistant', content: '' }, { content: 'Hello' }, { content: ' world' }].map(
      (delta) => `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`,
    )
    return new Response(chunks.join('') + BAD_EVENTS[variantOf(request, BAD_EVENTS)], { headers: SSE })
  })
}

function anthropicUpstream(): FakeUpstream {
  return fakeUpstream((request) => {
    const events: [string, unknown][] = [
      [
        'message_start',
        {
          type: 'message_start',
          message: {
            ...{ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-fake', content: [] },
            ...{ stop_reason: null, stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 } },
          },
        },
      ],
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
      ['ping', { type: 'ping' }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: ' world' } }],
    ]
    const text = events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`).join('')
    return new Response(text + ANTHROPIC_BAD_EVENTS[variantOf(request, ANTHROPIC_BAD_EVENTS)], { headers: SSE })
  })
}

// Every stream here fails on purpose: the circuits must stay closed through all of them.
const config = (openai: string, anthropic: string) => `
[tiers.pro]
requests_per_minute = 100000
tokens_per_minute = 100000000
max_concurrent = 100

[upstreams.oa]
kind = "openai"
base_url = "${openai}"
api_key_env = "FAKE_UPSTREAM_KEY"
max_retries = 0
failure_threshold = 1000

[upstreams.an]
kind = "anthropic"
base_url = "${anthropic}"
api_key_env = "FAKE_UPSTREAM_KEY"
max_retries = 0
failure_threshold = 1000

[aliases."oa/model"]
targets = [{ upstream = "oa", model = "gpt-fake" }]

[aliases."an/model"]
targets = [{ upstream = "an", model = "claude-fake" }]
`

interface Event {
  event: string | null
  data: string
}

const eventsOf = (text: string): Event[] =>
  text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => ({ event: /^event: (.*)$/m.exec(block)?.[1] ?? null, data: /^data: (.*)$/m.exec(block)?.[1] ?? '' }))

describe('a malformed upstream stream event keeps the valid events before it', () => {
  const dir = tempDir()
  let openai: FakeUpstream
  let anthropic: FakeUpstream
  let gateway: GatewayProcess
  let key: string

  setup(async () => {
    openai = openaiUpstream()
    anthropic = anthropicUpstream()
    const configPath = writeConfig(dir.path, config(openai.url, anthropic.url))
    gateway = await spawnGateway(
      { GATEWAY_DB: join(dir.path, 'gateway.sqlite'), GATEWAY_CONFIG: configPath, FAKE_UPSTREAM_KEY: 'sk-fake' },
      { expectFirstKey: true },
    )
    key = gateway.firstKey!
  }, SETUP_MS)
  teardown(async () => {
    await gateway?.stop()
    openai?.stop()
    anthropic?.stop()
    dir[Symbol.dispose]()
  }, TEARDOWN_MS)

  const post = async (path: string, body: Record<string, unknown>) => {
    const response = await fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ stream: true, ...body }),
    })
    expect(response.status).toBe(200)
    return eventsOf(await response.text())
  }
  const chat = (model: string, word: string) => post('/v1/chat/completions', { model, messages: [{ role: 'user', content: `variant-${word}` }] })
  const messages = (model: string, word: string) => post('/v1/messages', { model, max_tokens: 50, messages: [{ role: 'user', content: `variant-${word}` }] })

  /** The text of the chat chunks, and the error event that must end the stream. */
  function expectChatStream(events: Event[]) {
    const last = events.at(-1)!
    expect(JSON.parse(last.data)).toMatchObject({ error: { type: 'upstream_error' } })
    expect(events.some((e) => e.data === '[DONE]')).toBe(false)
    const text = events
      .slice(0, -1)
      .map((e) => (JSON.parse(e.data) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? '')
      .join('')
    expect(text).toBe('Hello world')
  }

  function expectMessagesStream(events: Event[]) {
    const last = events.at(-1)!
    expect(last.event).toBe('error')
    expect(JSON.parse(last.data)).toMatchObject({ type: 'error', error: { type: 'api_error' } })
    expect(events.some((e) => e.event === 'message_stop')).toBe(false)
    expect(events[0]!.event).toBe('message_start')
    const text = events
      .filter((e) => e.event === 'content_block_delta')
      .map((e) => (JSON.parse(e.data) as { delta: { text?: string } }).delta.text ?? '')
      .join('')
    expect(text).toBe('Hello world')
  }

  test('chat completions from an OpenAI-compatible upstream: truncated JSON, garbage, an error event', async () => {
    for (const word of Object.keys(BAD_EVENTS)) expectChatStream(await chat('oa/model', word))
  })

  test('/v1/messages translated from an OpenAI-compatible upstream', async () => {
    for (const word of Object.keys(BAD_EVENTS)) expectMessagesStream(await messages('oa/model', word))
  })

  test('/v1/messages passed through from an Anthropic upstream', async () => {
    for (const word of Object.keys(ANTHROPIC_BAD_EVENTS)) {
      const events = await messages('an/model', word)
      expectMessagesStream(events)
      expect(JSON.parse(events[0]!.data)).toMatchObject({ message: { model: 'an/model' } })
    }
  })

  test('chat completions translated from an Anthropic upstream', async () => {
    for (const word of Object.keys(ANTHROPIC_BAD_EVENTS)) expectChatStream(await chat('an/model', word))
  })
})
