import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import OpenAI from 'openai'
import { DEFAULT_MAX_TOKENS, finishReason, toAnthropicRequest } from '../src/providers/anthropic'
import { inProcessGateway, type InProcessGateway, json, tempDir, writeConfig } from './support/gateway'

interface Seen {
  path: string
  headers: Headers
  body: Record<string, any>
}

/** A fake Anthropic Messages API speaking the real wire format, JSON and SSE. */
function fakeAnthropic() {
  const seen: Seen[] = []
  const sse = (events: [string, unknown][]) => events.map(([event, data]) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`).join('')
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const body = (await req.json()) as Record<string, any>
      seen.push({ path: new URL(req.url).pathname, headers: req.headers, body })
      const last = String(body.messages.at(-1).content)
      if (last === 'bad') {
        return Response.json(
          { type: 'error', error: { type: 'invalid_request_error', message: 'messages: text content blocks must be non-empty' } },
          { status: 400 },
        )
      }
      if (last === 'overloaded') return Response.json({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, { status: 529 })
      if (!body.stream) {
        return Response.json({
          id: 'msg_01XYZ',
          type: 'message',
          role: 'assistant',
          model: body.model,
          content: [
            { type: 'text', text: 'Hello from ' },
            { type: 'text', text: 'Claude' },
          ],
          stop_reason: last === 'long' ? 'max_tokens' : 'end_turn',
          stop_sequence: null,
          usage: { input_tokens: 21, output_tokens: 4, cache_creation_input_tokens: 2, cache_read_input_tokens: 3 },
        })
      }
      const events: [string, unknown][] = [
        [
          'message_start',
          {
            type: 'message_start',
            message: {
              id: 'msg_01STREAM',
              type: 'message',
              role: 'assistant',
              model: body.model,
              content: [],
              stop_reason: null,
              usage: { input_tokens: 25, output_tokens: 1 },
            },
          },
        ],
        ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
        ['ping', { type: 'ping' }],
        ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } }],
        ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo!' } }],
      ]
      if (last === 'stream-error') {
        events.push(['error', { type: 'error', error: { type: 'api_error', message: 'Internal server error' } }])
      } else {
        events.push(
          ['content_block_stop', { type: 'content_block_stop', index: 0 }],
          ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 15 } }],
          ['message_stop', { type: 'message_stop' }],
        )
      }
      return new Response(sse(events), { headers: { 'content-type': 'text/event-stream' } })
    },
  })
  return { url: `http://127.0.0.1:${server.port}/v1`, seen, stop: () => void server.stop(true) }
}

describe('anthropic upstream', () => {
  const dir = tempDir()
  let anthropic: ReturnType<typeof fakeAnthropic>
  let gw: InProcessGateway
  const chat = (body: Record<string, unknown>) =>
    gw.request('/v1/chat/completions', json({ model: 'claude/fast', ...body }, { authorization: `Bearer ${gw.key}` }))

  beforeAll(async () => {
    anthropic = fakeAnthropic()
    const config = writeConfig(
      dir.path,
      `
[tiers.t]
requests_per_minute = 1000
tokens_per_minute = 1000000
max_concurrent = 10

[upstreams.claude]
kind = "anthropic"
base_url = "${anthropic.url}"
api_key_env = "TEST_ANTHROPIC_KEY"
max_retries = 1

[aliases."claude/fast"]
targets = [{ upstream = "claude", model = "claude-haiku-4-5" }]
`,
    )
    gw = await inProcessGateway({ env: { GATEWAY_CONFIG: config, TEST_ANTHROPIC_KEY: 'sk-ant-test-secret' } })
  })
  afterAll(() => {
    gw.close()
    anthropic.stop()
    dir[Symbol.dispose]()
  })

  test('the request is translated field by field', async () => {
    const response = await chat({
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'developer', content: 'Answer in English.' },
        { role: 'user', content: 'Hi' },
        { role: 'user', content: [{ type: 'text', text: 'there' }] },
        { role: 'assistant', content: 'Hello.' },
        { role: 'user', content: 'How are you?' },
      ],
      temperature: 1.7,
      top_p: 0.9,
      stop: ['END'],
      user: 'user-42',
    })
    expect(response.status).toBe(200)
    const seen = anthropic.seen.at(-1)!
    expect(seen.path).toBe('/v1/messages')
    expect(seen.headers.get('x-api-key')).toBe('sk-ant-test-secret')
    expect(seen.headers.get('anthropic-version')).toBe('2023-06-01')
    expect(seen.headers.get('authorization')).toBeNull()
    expect(seen.body).toEqual({
      model: 'claude-haiku-4-5',
      system: 'You are terse.\n\nAnswer in English.',
      messages: [
        { role: 'user', content: 'Hi\n\nthere' },
        { role: 'assistant', content: 'Hello.' },
        { role: 'user', content: 'How are you?' },
      ],
      max_tokens: DEFAULT_MAX_TOKENS,
      temperature: 1,
      top_p: 0.9,
      stop_sequences: ['END'],
      metadata: { user_id: 'user-42' },
    })
  })

  test('max_completion_tokens or max_tokens set max_tokens', () => {
    const base = { model: 'm', messages: [{ role: 'user' as const, content: 'x' }] }
    expect(toAnthropicRequest({ ...base, max_tokens: 100 }).max_tokens).toBe(100)
    expect(toAnthropicRequest({ ...base, max_tokens: 100, max_completion_tokens: 50 }).max_tokens).toBe(50)
    expect(toAnthropicRequest({ ...base, stop: 'X' }).stop_sequences).toEqual(['X'])
  })

  test('the response maps to a chat.completion: text joined, finish_reason, usage with cache tokens', async () => {
    const response = await chat({ messages: [{ role: 'user', content: 'Hi' }] })
    const body = (await response.json()) as Record<string, any>
    expect(body).toMatchObject({ id: 'msg_01XYZ', object: 'chat.completion', model: 'claude/fast' })
    expect(body.choices).toEqual([{ index: 0, message: { role: 'assistant', content: 'Hello from Claude' }, finish_reason: 'stop' }])
    expect(body.usage).toEqual({ prompt_tokens: 26, completion_tokens: 4, total_tokens: 30 })
    expect(response.headers.get('x-svc-model')).toBe('claude-haiku-4-5')
    expect(response.headers.get('x-svc-upstream')).toBe('claude')
    const long = (await (await chat({ messages: [{ role: 'user', content: 'long' }] })).json()) as Record<string, any>
    expect(long.choices[0].finish_reason).toBe('length')
  })

  test('stop reasons map to OpenAI finish reasons', () => {
    expect(finishReason('end_turn')).toBe('stop')
    expect(finishReason('stop_sequence')).toBe('stop')
    expect(finishReason('max_tokens')).toBe('length')
    expect(finishReason('tool_use')).toBe('tool_calls')
    expect(finishReason(null)).toBeNull()
  })

  test('SSE events become chat.completion.chunk events with usage from message_start and message_delta', async () => {
    const response = await chat({ messages: [{ role: 'user', content: 'Hi' }], stream: true, stream_options: { include_usage: true } })
    expect(response.status).toBe(200)
    expect(anthropic.seen.at(-1)!.body.stream).toBe(true)
    const events = (await response.text()).split('\n\n').filter(Boolean)
    expect(events.at(-1)).toBe('data: [DONE]')
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice('data: '.length)))
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'claude/fast' && c.id === 'msg_01STREAM')).toBe(true)
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' })
    expect(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('')).toBe('Hello!')
    expect(chunks.at(-2).choices[0].finish_reason).toBe('stop')
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 25, completion_tokens: 15, total_tokens: 40 } })
  })

  test('the official openai client streams from an Anthropic upstream', async () => {
    const client = new OpenAI({ apiKey: gw.key, baseURL: `${gw.listen()}/v1`, maxRetries: 0 })
    const stream = await client.chat.completions.create({ model: 'claude/fast', messages: [{ role: 'user', content: 'Hi' }], stream: true })
    let text = ''
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? ''
    expect(text).toBe('Hello!')
  })

  test("Anthropic's error shape: a 400 keeps status and message; 529 overloaded is retried then 502", async () => {
    const bad = await chat({ messages: [{ role: 'user', content: 'bad' }] })
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ error: { type: 'invalid_request_error', message: 'messages: text content blocks must be non-empty' } })
    const before = anthropic.seen.length
    const overloaded = await chat({ messages: [{ role: 'user', content: 'overloaded' }] })
    expect(overloaded.status).toBe(502)
    expect(((await overloaded.json()) as { error: { type: string } }).error.type).toBe('upstream_error')
    expect(anthropic.seen.length - before).toBe(2)
  })

  test('an error event mid-stream ends the stream with an error event and no [DONE]', async () => {
    const response = await chat({ messages: [{ role: 'user', content: 'stream-error' }], stream: true })
    const events = (await response.text()).split('\n\n').filter(Boolean)
    expect(events.some((e) => e.includes('[DONE]'))).toBe(false)
    expect(JSON.parse(events.at(-1)!.slice('data: '.length))).toMatchObject({ error: { type: 'upstream_error', code: 'upstream_stream_error' } })
  })
})
