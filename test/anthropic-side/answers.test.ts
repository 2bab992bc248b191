import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { type AnthropicSide, anthropicSide, OPENAI_USAGE, UPSTREAM_REASONING } from '../support/anthropic-side'
import { SETUP_MS, setup, teardown, TEARDOWN_MS, TEST_MS } from '../support/hooks'

/**
 * Translated answers on the Messages API (issue 24): `msg_` ids, a cheap input estimate at
 * message_start and the exact usage at the end, thinking the gateway signs and trusts when it comes
 * back (and never sends to Anthropic); Anthropic's model list for Claude Code; the unknown route;
 * the mock's tool directive for agent loops offline.
 */
setDefaultTimeout(TEST_MS)

interface SseEvent {
  event: string
  data: Record<string, unknown>
}

const eventsOf = (text: string): SseEvent[] =>
  text
    .split('\n\n')
    .filter((block) => block.startsWith('event: '))
    .map((block) => ({ event: /^event: (.*)$/m.exec(block)![1]!, data: JSON.parse(/^data: (.*)$/m.exec(block)![1]!) as Record<string, unknown> }))

describe('answers on the Messages API', () => {
  let side: AnthropicSide
  setup(async () => {
    side = await anthropicSide()
  }, SETUP_MS)
  teardown(() => side?.dispose(), TEARDOWN_MS)

  test('a translated answer is msg_ and the request id; a stream says an estimate of the input first and the exact usage last', async () => {
    const json = (await (await side.messages({ model: 't/oa', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }, 'req-json-1')).json()) as {
      id: string
      usage: { input_tokens: number; output_tokens: number }
    }
    expect(json.id).toBe('msg_req-json-1')
    expect(json.usage).toMatchObject({ input_tokens: OPENAI_USAGE.prompt_tokens, output_tokens: OPENAI_USAGE.completion_tokens })

    const content = 'a question of some length, to be estimated before the answer streams'
    const stream = await side.messages({ model: 't/oa', max_tokens: 64, stream: true, messages: [{ role: 'user', content }] }, 'req-stream-1')
    const events = eventsOf(await stream.text())
    const start = events[0]!.data.message as { id: string; usage: { input_tokens: number } }
    expect(start.id).toBe('msg_req-stream-1')
    // An estimate from the request's size, not a tokenizer's count, and never 0.
    expect(start.usage.input_tokens).toBeGreaterThan(0)
    const last = events.find((e) => e.event === 'message_delta')!.data.usage as { input_tokens: number; output_tokens: number }
    expect(last).toMatchObject({ input_tokens: OPENAI_USAGE.prompt_tokens, output_tokens: OPENAI_USAGE.completion_tokens })
    expect(events.at(-1)!.event).toBe('message_stop')
  })

  test('reasoning becomes thinking signed by the gateway, JSON and streamed; sent back, it reaches the OpenAI target as its reasoning again', async () => {
    const ask = { model: 't/oa', max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [{ role: 'user', content: 'hi' }] }
    const json = (await (await side.messages(ask)).json()) as { content: { type: string; thinking?: string; signature?: string }[] }
    const thinking = json.content[0]!
    expect(thinking).toMatchObject({ type: 'thinking', thinking: UPSTREAM_REASONING })
    expect(thinking.signature).toStartWith('cg1.')

    const events = eventsOf(await (await side.messages({ ...ask, stream: true })).text())
    const signature = events.find((e) => e.event === 'content_block_delta' && (e.data.delta as { type: string }).type === 'signature_delta')!
    expect((signature.data.delta as { signature: string }).signature).toBe(thinking.signature!)

    const followUp = (block: Record<string, unknown>) =>
      side.messages({
        ...ask,
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: [block, { type: 'text', text: 'Hello there' }] },
          { role: 'user', content: 'and then?' },
        ],
      })
    expect((await followUp(thinking)).status).toBe(200)
    expect((side.last(side.openai).body.messages as Record<string, unknown>[])[1]).toEqual({
      role: 'assistant',
      content: 'Hello there',
      reasoning_content: UPSTREAM_REASONING,
    })
    // Tampered with: not trusted, not sent.
    expect((await followUp({ ...thinking, thinking: 'Something else.' })).status).toBe(200)
    expect((side.last(side.openai).body.messages as Record<string, unknown>[])[1]).toEqual({ role: 'assistant', content: 'Hello there' })
  })

  test("thinking the gateway signed never reaches Anthropic, which would refuse it; Anthropic's own thinking goes back untouched", async () => {
    const signed = (
      (await (
        await side.messages({
          model: 't/oa',
          max_tokens: 2048,
          thinking: { type: 'enabled', budget_tokens: 1024 },
          messages: [{ role: 'user', content: 'hi' }],
        })
      ).json()) as { content: Record<string, unknown>[] }
    ).content[0]!
    const own = { type: 'thinking', thinking: 'Anthropic thought.', signature: 'anthropic-signature-1' }
    const response = await side.messages({
      model: 'anthropic/claude',
      max_tokens: 2048,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [signed, { type: 'text', text: 'one' }] },
        { role: 'user', content: 'next' },
        { role: 'assistant', content: [own, { type: 'text', text: 'two' }] },
        { role: 'user', content: 'last' },
      ],
    })
    expect(response.status).toBe(200)
    const sent = side.last(side.anthropic)
    expect(sent.text).not.toContain('cg1.')
    expect((sent.body.messages as { content: unknown[] }[])[1]!.content).toEqual([{ type: 'text', text: 'one' }])
    expect((sent.body.messages as { content: unknown[] }[])[3]!.content).toEqual([own, { type: 'text', text: 'two' }])
  })

  test("GET /v1/models with anthropic-version answers Anthropic's list and model records, for Claude Code's model picker", async () => {
    const headers = { 'anthropic-version': '2023-06-01' }
    const list = (await (await fetch(`${side.gateway.url}/v1/models`, { headers })).json()) as Record<string, unknown> & { data: Record<string, unknown>[] }
    expect(list.has_more).toBe(false)
    expect(list.first_id).toBe(list.data[0]!.id as string)
    expect(list.last_id).toBe(list.data.at(-1)!.id as string)
    expect(list.data.find((m) => m.id === 'anthropic/claude')).toMatchObject({ type: 'model', id: 'anthropic/claude', display_name: 'anthropic/claude' })
    expect(Number.isNaN(Date.parse(list.data[0]!.created_at as string))).toBe(false)
    const one = (await (await fetch(`${side.gateway.url}/v1/models/anthropic/claude`, { headers })).json()) as Record<string, unknown>
    expect(one).toMatchObject({ type: 'model', id: 'anthropic/claude' })
    const openai = (await (await fetch(`${side.gateway.url}/v1/models`)).json()) as { object: string }
    expect(openai.object).toBe('list')
  })

  test('an unknown route names its method and path, with code unknown_route, and points at /swagger', async () => {
    const response = await fetch(`${side.gateway.url}/v1/responses/compact`, { method: 'POST', headers: { authorization: `Bearer ${side.key}` } })
    expect(response.status).toBe(404)
    const { error } = (await response.json()) as { error: { type: string; code: string; message: string } }
    expect(error).toMatchObject({ type: 'not_found_error', code: 'unknown_route' })
    expect(error.message).toContain('POST /v1/responses/compact')
    expect(error.message).toContain('/swagger')
  })

  test('the mock calls a tool a user message asks for with [[tool:NAME {args}]], and answers in text once the result is back', async () => {
    const tools = [{ name: 'Bash', input_schema: { type: 'object', properties: { command: { type: 'string' } } } }]
    const prompt = 'Run it please [[tool:Bash {"command":"echo ran"}]]'
    const first = (await (await side.messages({ model: 'local/echo', max_tokens: 64, tools, messages: [{ role: 'user', content: prompt }] })).json()) as {
      stop_reason: string
      content: { type: string; id?: string; name?: string; input?: unknown }[]
    }
    expect(first.stop_reason).toBe('tool_use')
    const call = first.content.find((b) => b.type === 'tool_use')!
    expect(call).toMatchObject({ name: 'Bash', input: { command: 'echo ran' } })
    const second = (await (
      await side.messages({
        model: 'local/echo',
        max_tokens: 64,
        tools,
        messages: [
          { role: 'user', content: prompt },
          { role: 'assistant', content: first.content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'ran' }] },
        ],
      })
    ).json()) as { stop_reason: string; content: { type: string; text?: string }[] }
    expect(second.stop_reason).toBe('end_turn')
    expect(second.content).toEqual([{ type: 'text', text: 'Run it please' }])
  })
})
