import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { type AnthropicSide, anthropicSide } from '../support/anthropic-side'
import { SETUP_MS, setup, teardown, TEARDOWN_MS, TEST_MS } from '../support/hooks'

/**
 * Everything the Anthropic side sends, on each kind of target (issue 24): system messages in the
 * conversation (Claude Code's environment block), its attribution block, caching hints named in
 * x-svc-dropped, output_config.format, tool_reference blocks, and chat requests to Anthropic that
 * keep a later system message in place.
 */
setDefaultTimeout(TEST_MS)

const BILLING = { type: 'text', text: 'x-anthropic-billing-header: cc_version=2.1.332; cc_entrypoint=sdk-cli' }
const environment = { role: 'system', content: '<env>Working directory: /tmp/project</env>' }
const base = { max_tokens: 256 }

describe('requests from the Anthropic side', () => {
  let side: AnthropicSide
  setup(async () => {
    side = await anthropicSide()
  }, SETUP_MS)
  teardown(() => side?.dispose(), TEARDOWN_MS)

  test('a system message in `messages` reaches an OpenAI-compatible target at its place; as a reminder or folded where the upstream says', async () => {
    const body = { ...base, system: 'You are terse.', messages: [{ role: 'user', content: 'hi' }, environment, { role: 'user', content: 'go on' }] }
    for (const [model, expected] of [
      [
        't/oa',
        [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: 'hi' },
          { role: 'system', content: environment.content },
          { role: 'user', content: 'go on' },
        ],
      ],
      [
        't/oa-user',
        [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: 'hi' },
          { role: 'user', content: `<system-reminder>\n${environment.content}\n</system-reminder>` },
          { role: 'user', content: 'go on' },
        ],
      ],
      [
        't/oa-fold',
        [
          { role: 'system', content: `You are terse.\n\n${environment.content}` },
          { role: 'user', content: 'hi' },
          { role: 'user', content: 'go on' },
        ],
      ],
    ] as const) {
      const response = await side.messages({ ...body, model })
      expect(response.status).toBe(200)
      expect(side.last(side.openai).body.messages).toEqual(expected as never)
    }
  })

  test('an Anthropic target gets the system message, the attribution block and every cache_control as sent, and nothing is named dropped', async () => {
    const body = {
      ...base,
      model: 'anthropic/claude',
      cache_control: { type: 'ephemeral' },
      system: [BILLING, { type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
      messages: [environment, { role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] }],
    }
    const response = await side.messages(body)
    expect(response.status).toBe(200)
    expect(response.headers.get('x-svc-dropped')).toBeNull()
    const sent = side.last(side.anthropic).body
    expect(sent).toEqual({ ...body, model: 'claude-fake' } as never)
  })

  test('an OpenAI-compatible target gets neither the attribution block nor caching hints, and the answer names both in x-svc-dropped', async () => {
    const response = await side.messages({
      ...base,
      model: 't/oa',
      cache_control: { type: 'ephemeral' },
      system: [BILLING, { type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] }],
    })
    expect(response.status).toBe(200)
    expect(response.headers.get('x-svc-dropped')!.split(', ').sort()).toEqual(['cache_control', 'x-anthropic-billing-header'])
    const sent = side.last(side.openai)
    expect(sent.body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
    ])
    expect(sent.text).not.toContain('cache_control')
    expect(sent.text).not.toContain('billing')
  })

  test('output_config.format becomes strict structured output, and the JSON comes back as one text block', async () => {
    const schema = { type: 'object', properties: { answer: { type: 'integer' } }, required: ['answer'], additionalProperties: false }
    const response = await side.messages({
      ...base,
      model: 't/oa',
      output_config: { format: { type: 'json_schema', schema } },
      messages: [{ role: 'user', content: 'What is six times seven?' }],
    })
    expect(response.status).toBe(200)
    expect(side.last(side.openai).body.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'response', schema, strict: true } })
    const message = (await response.json()) as { content: { type: string; text: string }[] }
    expect(message.content).toEqual([{ type: 'text', text: '{"answer":42}' }])
  })

  test('tool_reference blocks in a tool result become text naming the tool; defer_loading tools are declared like others', async () => {
    const response = await side.messages({
      ...base,
      model: 't/oa',
      tools: [
        { name: 'ToolSearch', input_schema: { type: 'object' } },
        { name: 'WebFetch', description: 'Fetch a page', input_schema: { type: 'object' }, defer_loading: true },
      ],
      messages: [
        { role: 'user', content: 'find a fetch tool' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'ToolSearch', input: { query: 'fetch' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'tool_reference', tool_name: 'WebFetch' }] }] },
      ],
    })
    expect(response.status).toBe(200)
    const sent = side.last(side.openai).body as { messages: unknown[]; tools: { function: { name: string } }[] }
    expect(sent.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'toolu_1', content: 'The tool "WebFetch" is now available.' })
    expect(sent.tools.map((t) => t.function.name)).toEqual(['ToolSearch', 'WebFetch'])
  })

  test('a chat request to Anthropic: leading system messages become `system`, a later one stays in place; dropped sampling hints are named', async () => {
    const response = await side.chat({
      model: 'anthropic/claude',
      seed: 7,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello' },
        { role: 'developer', content: 'Now answer in French.' },
        { role: 'user', content: 'how are you?' },
      ],
    })
    expect(response.status).toBe(200)
    expect(response.headers.get('x-svc-dropped')).toBe('seed')
    const sent = side.last(side.anthropic).body as { system: unknown; messages: unknown[] }
    expect(sent.system).toEqual([{ type: 'text', text: 'Be brief.' }])
    expect(sent.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'hello' }] },
      { role: 'system', content: [{ type: 'text', text: 'Now answer in French.' }] },
      { role: 'user', content: [{ type: 'text', text: 'how are you?' }] },
    ])
  })

  test('a chat request with a later system message, to an upstream that takes none: passed as a reminder, the rest of the body as sent', async () => {
    const response = await side.chat({
      model: 't/oa-user',
      top_k_unknown_to_the_gateway: 3,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi' },
        { role: 'system', content: 'Later rules.' },
      ],
    })
    expect(response.status).toBe(200)
    const sent = side.last(side.openai).body as Record<string, unknown>
    expect(sent.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
      { role: 'user', content: '<system-reminder>\nLater rules.\n</system-reminder>' },
    ])
    expect(sent.top_k_unknown_to_the_gateway).toBe(3)
  })
})
