/**
 * The request log's pure parts: redaction, cutting, streams assembled per dialect, the settings
 * checked at start naming the bad field; and retention, on a gateway whose clock the test moves.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { parseGatewayConfig } from '../../src/config/load'
import { providerKinds } from '../../src/providers'
import { cutBody, redactBody, redactPaths, redactUrl } from '../../src/request-log/bodies'
import { noteAnswer } from '../../src/request-log/answer'
import { StreamAnswer } from '../../src/request-log/stream-answer'
import type { RequestRecord } from '../../src/observe/request-record'
import { DAY_MS } from '../../src/time'
import { chatBody, inProcessGateway, json } from '../support/gateway'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

const sse = (events: unknown[]) => events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('')

describe('redaction', () => {
  test('credential members at any depth, credentials in URLs, and the configured paths', () => {
    const body = JSON.stringify({
      metadata: { secret: 's1', keep: 1 },
      tools: [{ type: 'mcp', server_url: 'https://mcp.example/sse?token=t1&x=2', headers: { Authorization: 'Bearer b1', 'X-Api-Key': 'k1' } }],
      input: [{ name: 'n1' }, { name: 'n2' }],
      note: 'see https://u:p@host.example/a?api-key=k2',
    })
    const kept = JSON.parse(redactBody(body, redactPaths(['metadata.secret', 'input.*.name', 'absent.path'])))
    expect(kept.metadata).toEqual({ secret: '[redacted]', keep: 1 })
    expect(kept.tools[0].headers).toEqual({ Authorization: '[redacted]', 'X-Api-Key': '[redacted]' })
    expect(kept.tools[0].server_url).toBe('https://mcp.example/sse?token=%5Bredacted%5D&x=2')
    expect(kept.input).toEqual([{ name: '[redacted]' }, { name: '[redacted]' }])
    // A URL inside text too.
    expect(kept.note).toBe('see https://%5Bredacted%5D:%5Bredacted%5D@host.example/a?api-key=%5Bredacted%5D')
    expect(redactUrl('https://host.example/a?q=cats')).toBe('https://host.example/a?q=cats')
  })

  test('a body that is not JSON keeps its URL credentials out', () => {
    expect(redactBody('{"broken https://h.example/?key=abc def', [])).toBe('{"broken https://h.example/?key=%5Bredacted%5D def')
  })

  test('cutting: at a character boundary, with the whole length named', () => {
    expect(cutBody('short', 1024)).toBe('short')
    const cut = cutBody('€'.repeat(100), 10)
    expect(cut).toBe('€€€…[truncated: 300 bytes in all]')
  })
})

describe('streams assembled', () => {
  test('chat completion chunks: content, tool call arguments, finish reason, usage', () => {
    const answer = new StreamAnswer('chat.completions', 1000)
    const base = { id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm' }
    const text = sse([
      { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: 'Hel' } }] },
      { ...base, choices: [{ index: 0, delta: { content: 'lo', tool_calls: [{ index: 0, id: 't1', function: { name: 'f', arguments: '{"a"' } }] } }] },
      { ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: ':1}' } }] }, finish_reason: 'tool_calls' }] },
      { ...base, choices: [], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } },
    ])
    // Split mid-event: the assembler waits for the rest.
    answer.push(text.slice(0, 50))
    answer.push(`${text.slice(50)}data: [DONE]\n\n`)
    expect(JSON.parse(answer.json())).toEqual({
      id: 'c1',
      object: 'chat.completion',
      created: 1,
      model: 'm',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Hello', tool_calls: [{ id: 't1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] },
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
    })
  })

  test("Anthropic's events: blocks, tool input, stop reason", () => {
    const answer = new StreamAnswer('messages', 1000)
    answer.push(
      sse([
        { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', content: [], usage: { input_tokens: 3 } } },
        { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
        { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } },
        { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'tu', name: 'f', input: {} } },
        { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"q":' } },
        { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '"x"}' } },
        { type: 'message_delta', delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 5 } },
        { type: 'message_stop' },
      ]),
    )
    expect(JSON.parse(answer.json())).toEqual({
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      content: [
        { type: 'text', text: 'Hi' },
        { type: 'tool_use', id: 'tu', name: 'f', input: { q: 'x' } },
      ],
      stop_reason: 'tool_use',
      usage: { input_tokens: 3, output_tokens: 5 },
    })
  })

  test('the Responses API: the response its last event carries', () => {
    const answer = new StreamAnswer('responses', 1000)
    answer.push(
      sse([
        { type: 'response.created', response: { id: 'resp_1', status: 'in_progress', output: [] } },
        { type: 'response.output_text.delta', delta: 'Hi' },
        { type: 'response.completed', response: { id: 'resp_1', status: 'completed', output: [{ type: 'message' }] } },
      ]),
    )
    expect(JSON.parse(answer.json())).toEqual({ id: 'resp_1', status: 'completed', output: [{ type: 'message' }] })
  })

  test("Gemini's partial answers: text parts joined, finish reason and usage kept; long text bounded", () => {
    const answer = new StreamAnswer('gemini.streamGenerateContent', 6)
    answer.push(
      sse([
        { candidates: [{ index: 0, content: { role: 'model', parts: [{ text: 'Good ' }] } }], responseId: 'r1' },
        { candidates: [{ index: 0, content: { role: 'model', parts: [{ text: 'day' }] }, finishReason: 'STOP' }], usageMetadata: { totalTokenCount: 4 } },
      ]),
    )
    expect(JSON.parse(answer.json())).toEqual({
      candidates: [{ index: 0, content: { role: 'model', parts: [{ text: 'Good d' }] }, finishReason: 'STOP' }],
      responseId: 'r1',
      usageMetadata: { totalTokenCount: 4 },
    })
  })
})

describe('what a record notes of its answer', () => {
  const responsesRecord = () => ({ id: 'r', start: 0, method: 'POST', path: '/v1/responses', api: 'responses' }) as RequestRecord
  const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`
  const item = { type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [] }

  test("a Responses stream's finish reason is its terminal event, not an item's status before it", () => {
    const record = responsesRecord()
    noteAnswer(record, event('response.created', { response: { id: 'resp_1', status: 'in_progress' } }) + event('response.output_item.done', { item }))
    expect(record.responseId).toBe('resp_1')
    expect(record.finishReasons).toBeUndefined()
    noteAnswer(record, event('response.incomplete', { response: { id: 'resp_1', status: 'incomplete', output: [item] } }))
    expect(record.finishReasons).toEqual(['incomplete'])
  })

  test("every dialect's spelling of a finish reason is noted, from whichever piece of a stream carries it", () => {
    const record = { id: 'r', start: 0, method: 'POST', path: '/v1/chat/completions', api: 'chat.completions' } as RequestRecord
    noteAnswer(record, 'data: {"id":"chatcmpl-1","choices":[{"delta":{"content":"hi"},"finish_reason":null}]}\n\n')
    expect(record.finishReasons).toBeUndefined()
    noteAnswer(record, 'data: {"choices":[{"delta":{},"finish_reason":"tool_calls"}]}\n\n')
    noteAnswer(record, 'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"}}\n\n')
    noteAnswer(record, '{"candidates":[{"finishReason":"STOP"}],"responseId":"g1"}')
    expect(record.finishReasons).toEqual(['tool_calls', 'end_turn', 'STOP'])
    expect(record.responseId).toBe('chatcmpl-1')
  })

  test('a whole Responses stream at once (a cache hit), and a JSON Response by its own status', () => {
    const whole = responsesRecord()
    noteAnswer(whole, event('response.output_item.done', { item }) + event('response.completed', { response: { id: 'resp_2', status: 'completed' } }))
    expect(whole.finishReasons).toEqual(['completed'])
    const json = responsesRecord()
    noteAnswer(json, JSON.stringify({ id: 'resp_3', object: 'response', status: 'incomplete', output: [item] }))
    expect(json.finishReasons).toEqual(['incomplete'])
  })
})

describe('[request_log] settings, checked at start', () => {
  const parse = (raw: unknown) => parseGatewayConfig(raw, 'test.toml', providerKinds)
  const tier = { requests_per_minute: 1, tokens_per_minute: 1, max_concurrent: 1 }

  test('defaults, and a tier override', () => {
    expect(parse({}).requestLog).toEqual({ enabled: true, bodies: 'off', tierBodies: {}, maxBodyBytes: 65_536, redact: [], retentionDays: 30 })
    const config = parse({ tiers: { debug: { ...tier, request_log: { bodies: 'all' } } }, request_log: { bodies: 'errors', redact: ['metadata.secret'] } })
    expect(config.requestLog).toMatchObject({ bodies: 'errors', tierBodies: { debug: 'all' }, redact: ['metadata.secret'] })
  })

  test('a bad value or an unknown field is refused, naming it', () => {
    for (const [raw, field] of [
      [{ request_log: { bodies: 'some' } }, 'request_log.bodies'],
      [{ request_log: { max_body_bytes: 0 } }, 'request_log.max_body_bytes'],
      [{ request_log: { retention_days: 0 } }, 'request_log.retention_days'],
      [{ request_log: { redact: ['metadata..secret'] } }, 'request_log.redact[0]'],
      [{ request_log: { bodyz: 'all' } }, 'request_log.bodyz'],
      [{ tiers: { t: { ...tier, request_log: { bodies: 'everything' } } } }, 'tiers.t.request_log.bodies'],
    ] as const) {
      expect(() => parse(raw)).toThrow(`Invalid config (test.toml): ${field}:`)
    }
  })
})

test('retention_days: records older than it are pruned (an injected clock)', async () => {
  let now = Date.UTC(2026, 0, 1)
  const gw = await inProcessGateway({ env: { GATEWAY_ADMIN_KEY: 'admin-key-for-tests-0123456789' }, now: () => now })
  try {
    const send = (id: string) => gw.request('/v1/chat/completions', json(chatBody(), { authorization: `Bearer ${gw.key}`, 'x-request-id': id }))
    await send('old')
    now += 20 * DAY_MS
    await send('recent')
    const log = gw.gateway.serving.requestLog
    await log.fold()
    now += 10 * DAY_MS + 1
    expect(await log.prune()).toBe(1)
    expect(await log.get('old')).toBeNull()
    expect((await log.get('recent'))?.id).toBe('recent')
    now += 20 * DAY_MS
    expect(await log.prune()).toBe(1)
    expect((await log.list({ limit: 10 })).data).toEqual([])
  } finally {
    await gw.close()
  }
})
