/**
 * The Responses API's request as the pivot (src/wire/openai-responses/request-to-chat.ts), row by
 * row, and what a translated target cannot serve (cannot-serve.ts). Shapes from the openai SDK's
 * resources/responses/responses.d.ts (v7.57.0: ResponseCreateParamsBase, ResponseInputItem,
 * FunctionTool, CustomTool, NamespaceTool, ToolChoiceAllowed) and OpenAI's published OpenAPI
 * document (test/fixtures/openai/openapi: CreateResponse, InputItem, Tool, ToolChoiceParam).
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { unsupported } from '../../src/errors'
import { statusOf } from '../../src/http/errors'
import { chatCannotServe, gatewayRefuses, hostedToolRefused } from '../../src/wire/openai-responses/cannot-serve'
import { toChatRequest, type ToChatOptions } from '../../src/wire/openai-responses/request-to-chat'
import type { InputItem, ResponsesRequest } from '../../src/wire/openai-responses/types'
import { reasoningSealer } from '../../src/wire/pivot/sealed-reasoning'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

const sealer = reasoningSealer('test secret')
const OPTIONS: ToChatOptions = { maxEffort: 'high', unseal: sealer.unseal }
const translate = (request: Partial<ResponsesRequest>, options: Partial<ToChatOptions> = {}) =>
  toChatRequest({ model: 'openai/gpt-5.6', ...request }, 'target-model', { ...OPTIONS, ...options })
const chat = (request: Partial<ResponsesRequest>, options: Partial<ToChatOptions> = {}) => translate(request, options).chat
const refusal = (request: Partial<ResponsesRequest>, history: InputItem[] = []) => chatCannotServe({ model: 'a/b', ...request }, history)

describe('input and instructions', () => {
  test('a string input is one user message; instructions come first as a system message; the model is the target', () => {
    expect(chat({ input: 'Hello', instructions: 'Be brief.' })).toEqual({
      model: 'target-model',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hello' },
      ],
    })
  })

  test('system and developer items are system messages where they stand; later ones stay in place', () => {
    const { messages } = chat({
      instructions: 'Top.',
      input: [
        { role: 'developer', content: 'Dev rules.' },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Q1' }] },
        { role: 'system', content: [{ type: 'input_text', text: 'Mid-conversation reminder.' }] },
        { role: 'user', content: 'Q2' },
      ],
    })
    expect(messages).toEqual([
      { role: 'system', content: 'Top.' },
      { role: 'system', content: 'Dev rules.' },
      { role: 'user', content: 'Q1' },
      { role: 'system', content: 'Mid-conversation reminder.' },
      { role: 'user', content: 'Q2' },
    ])
  })

  test('user parts: input_text, input_image (URL, data URL, detail; "original" is "high"), input_file (file_data), input_audio', () => {
    const { messages } = chat({
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Look:' },
            { type: 'input_image', image_url: 'https://example.com/a.png', detail: 'low' },
            { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'original' },
            { type: 'input_file', file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' },
            { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
          ],
        },
      ],
    })
    expect(messages[0]!.content).toEqual([
      { type: 'text', text: 'Look:' },
      { type: 'image_url', image_url: { url: 'https://example.com/a.png', detail: 'low' } },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'high' } },
      { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' } },
      { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
    ])
  })

  test('assistant items: output_text and refusal parts; Codex’s `phase` is dropped by name', () => {
    const { chat: out, dropped } = translate({
      input: [
        { role: 'user', content: 'Hi' },
        { type: 'message', role: 'assistant', phase: 'final_answer', content: [{ type: 'output_text', text: 'Hello!', annotations: [] }] },
        { role: 'user', content: 'Something bad' },
        { type: 'message', role: 'assistant', content: [{ type: 'refusal', refusal: 'No.' }] },
      ],
    })
    expect(out.messages[1]).toEqual({ role: 'assistant', content: 'Hello!' })
    expect(out.messages[3]).toEqual({ role: 'assistant', content: [{ type: 'refusal', refusal: 'No.' }] })
    expect(dropped).toEqual(['phase'])
  })

  test('a rebuilt conversation (previous_response_id) goes after the instructions and before the input', () => {
    const history: InputItem[] = [
      { role: 'user', content: 'First' },
      { type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'One', annotations: [], logprobs: [] }] },
    ]
    expect(chat({ instructions: 'Sys', input: 'Second' }, { history }).messages).toEqual([
      { role: 'system', content: 'Sys' },
      { role: 'user', content: 'First' },
      { role: 'assistant', content: 'One' },
      { role: 'user', content: 'Second' },
    ])
  })
})

describe('tool calls and their outputs', () => {
  test('consecutive function_call items are ONE assistant message with N calls (parallel), after its text; outputs match by call_id', () => {
    const { messages } = chat({
      input: [
        { role: 'user', content: 'Weather in Paris and Rome?' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.' }] },
        { type: 'function_call', call_id: 'call_a', name: 'weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call', id: 'fc_2', call_id: 'call_b', name: 'weather', arguments: '{"city":"Rome"}', status: 'completed' },
        { type: 'function_call_output', call_id: 'call_a', output: '18C' },
        { type: 'function_call_output', call_id: 'call_b', output: [{ type: 'input_text', text: '21C' }] },
      ],
    })
    expect(messages).toEqual([
      { role: 'user', content: 'Weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_b', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: '18C' },
      { role: 'tool', tool_call_id: 'call_b', content: '21C' },
    ])
  })

  test('function tools in the flat shape become pivot function tools (strict and parameters kept when given)', () => {
    const out = chat({
      tools: [
        {
          type: 'function',
          name: 'weather',
          description: 'Get weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
          strict: true,
        },
        { type: 'function', name: 'now', parameters: null, strict: null },
      ],
      tool_choice: 'required',
      parallel_tool_calls: false,
    })
    expect(out.tools).toEqual([
      {
        type: 'function',
        function: { name: 'weather', description: 'Get weather', parameters: { type: 'object', properties: { city: { type: 'string' } } }, strict: true },
      },
      { type: 'function', function: { name: 'now' } },
    ])
    expect(out.tool_choice).toBe('required')
    expect(out.parallel_tool_calls).toBe(false)
  })

  test('custom (freeform) tools are functions taking one string `input`, the grammar told in words; their calls and outputs round trip', () => {
    const { chat: out, names } = translate({
      tools: [
        { type: 'custom', name: 'apply_patch', description: 'Patch files', format: { type: 'grammar', syntax: 'lark', definition: 'start: "*** Begin"' } },
      ],
      input: [
        { role: 'user', content: 'Fix it' },
        { type: 'custom_tool_call', call_id: 'call_p', name: 'apply_patch', input: '*** Begin Patch' },
        { type: 'custom_tool_call_output', call_id: 'call_p', output: 'Done' },
      ],
    })
    expect(out.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'apply_patch',
          description: 'Patch files',
          parameters: {
            type: 'object',
            properties: { input: { type: 'string', description: 'The raw input, following this lark grammar:\nstart: "*** Begin"' } },
            required: ['input'],
            additionalProperties: false,
          },
        },
      },
    ])
    expect(out.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_p', type: 'function', function: { name: 'apply_patch', arguments: '{"input":"*** Begin Patch"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_p', content: 'Done' },
    ])
    expect(names.get('apply_patch')).toEqual({ kind: 'custom', name: 'apply_patch' })
  })

  test('namespace tools are flattened to <namespace>__<name>, the namespace description kept; namespaced calls in history too', () => {
    const { chat: out, names } = translate({
      tools: [
        {
          type: 'namespace',
          name: 'crm',
          description: 'The CRM.',
          tools: [
            { type: 'function', name: 'lookup', description: 'Find a customer', parameters: { type: 'object' } },
            { type: 'custom', name: 'note' },
          ],
        },
      ],
      input: [{ type: 'function_call', call_id: 'c1', namespace: 'crm', name: 'lookup', arguments: '{}' }],
    })
    expect(out.tools!.map((t) => (t as { function: { name: string; description?: string } }).function)).toMatchObject([
      { name: 'crm__lookup', description: 'The CRM.\n\nFind a customer' },
      { name: 'crm__note', description: 'The CRM.' },
    ])
    expect(out.messages[0]!.tool_calls![0]!.function.name).toBe('crm__lookup')
    expect(names.get('crm__lookup')).toEqual({ kind: 'function', name: 'lookup', namespace: 'crm' })
    expect(names.get('crm__note')).toEqual({ kind: 'custom', name: 'note', namespace: 'crm' })
  })

  test('additional_tools items add their tools; hosted tools are listed apart (with where they were) for the exchange', () => {
    const { chat: out, hosted } = translate({
      tools: [
        { type: 'web_search', search_context_size: 'low' },
        { type: 'function', name: 'a' },
      ],
      input: [
        {
          type: 'additional_tools',
          role: 'developer',
          tools: [
            { type: 'namespace', name: 'functions', description: 'Local', tools: [{ type: 'custom', name: 'exec' }] },
            { type: 'code_interpreter', container: { type: 'auto' } },
          ],
        },
        { role: 'user', content: 'go' },
      ],
    })
    expect(out.tools!.map((t) => (t as { function: { name: string } }).function.name)).toEqual(['a', 'functions__exec'])
    expect(hosted).toEqual([
      { type: 'web_search', param: 'tools.0', tool: { type: 'web_search', search_context_size: 'low' } },
      { type: 'code_interpreter', param: 'input.0.tools.1', tool: { type: 'code_interpreter', container: { type: 'auto' } } },
    ])
    expect(out.messages).toEqual([{ role: 'user', content: 'go' }])
  })

  test('tool_choice: auto, none, required, a function, a custom tool, allowed_tools (the tool list narrowed)', () => {
    const tools: ResponsesRequest['tools'] = [
      { type: 'function', name: 'a' },
      { type: 'function', name: 'b' },
      { type: 'custom', name: 'c' },
    ]
    for (const choice of ['auto', 'none', 'required'] as const) expect(chat({ tools, tool_choice: choice }).tool_choice).toBe(choice)
    expect(chat({ tools, tool_choice: { type: 'function', name: 'b' } }).tool_choice).toEqual({ type: 'function', function: { name: 'b' } })
    expect(chat({ tools, tool_choice: { type: 'custom', name: 'c' } }).tool_choice).toEqual({ type: 'function', function: { name: 'c' } })
    const allowed = chat({
      tools,
      tool_choice: {
        type: 'allowed_tools',
        mode: 'required',
        tools: [
          { type: 'function', name: 'a' },
          { type: 'custom', name: 'c' },
        ],
      },
    })
    expect(allowed.tools!.map((t) => (t as { function: { name: string } }).function.name)).toEqual(['a', 'c'])
    expect(allowed.tool_choice).toBe('required')
    // A choice naming a namespace member by its own name picks its flattened name.
    const namespaced = chat({
      tools: [{ type: 'namespace', name: 'crm', description: 'CRM', tools: [{ type: 'function', name: 'lookup' }] }],
      tool_choice: { type: 'function', name: 'lookup' },
    })
    expect(namespaced.tool_choice).toEqual({ type: 'function', function: { name: 'crm__lookup' } })
  })

  test('without tools, tool_choice and parallel_tool_calls are not sent (chat completions refuses them alone)', () => {
    const out = chat({ input: 'x', tool_choice: 'auto', parallel_tool_calls: true, tools: [{ type: 'web_search' }] })
    expect(out.tools).toBeUndefined()
    expect(out.tool_choice).toBeUndefined()
    expect(out.parallel_tool_calls).toBeUndefined()
  })
})

describe('settings', () => {
  test('text.format: text (nothing), json_object, json_schema with name, schema, description and strict', () => {
    expect(chat({ text: { format: { type: 'text' } } }).response_format).toBeUndefined()
    expect(chat({ text: { format: { type: 'json_object' } } }).response_format).toEqual({ type: 'json_object' })
    const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false }
    expect(chat({ text: { format: { type: 'json_schema', name: 'count', schema, strict: true, description: 'A count' } } }).response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'count', schema, strict: true, description: 'A count' },
    })
  })

  test('reasoning.effort is reasoning_effort, capped at the target’s maximum; max is xhigh; none and minimal pass; summary has no chat field', () => {
    expect(chat({ reasoning: { effort: 'medium', summary: 'auto' } })).toMatchObject({ reasoning_effort: 'medium' })
    expect(chat({ reasoning: { effort: 'xhigh' } }).reasoning_effort).toBe('high')
    expect(chat({ reasoning: { effort: 'max' } }, { maxEffort: 'xhigh' }).reasoning_effort).toBe('xhigh')
    expect(chat({ reasoning: { effort: 'high' } }, { maxEffort: 'low' }).reasoning_effort).toBe('low')
    expect(chat({ reasoning: { effort: 'minimal' } }).reasoning_effort).toBe('minimal')
    expect(chat({ reasoning: { effort: 'none' } }).reasoning_effort).toBe('none')
    expect(Object.keys(chat({ reasoning: { summary: 'detailed' } }))).toEqual(['model', 'messages'])
  })

  test('max_output_tokens, sampling, user and hints the pivot carries; the gateway’s own fields never go upstream', () => {
    const out = chat({
      input: 'x',
      max_output_tokens: 500,
      temperature: 0.2,
      top_p: 0.9,
      user: 'u1',
      safety_identifier: 's1',
      prompt_cache_key: 'k1',
      prompt_cache_retention: '24h',
      service_tier: 'flex',
      text: { verbosity: 'low' },
      stream: true,
      metadata: { a: 'b' },
      store: false,
      include: ['reasoning.encrypted_content'],
      previous_response_id: 'resp_1',
      stream_options: { include_obfuscation: false },
    })
    expect(out).toEqual({
      model: 'target-model',
      messages: [{ role: 'user', content: 'x' }],
      max_completion_tokens: 500,
      temperature: 0.2,
      top_p: 0.9,
      user: 'u1',
      safety_identifier: 's1',
      prompt_cache_key: 'k1',
      prompt_cache_retention: '24h',
      service_tier: 'flex',
      verbosity: 'low',
      stream: true,
    })
  })

  test('hints a translated target goes without are named in `dropped`', () => {
    const { dropped } = translate({
      input: 'x',
      truncation: 'auto',
      max_tool_calls: 3,
      client_metadata: { session: 'abc' },
      context_management: [{ type: 'compaction' }],
      reasoning: { effort: 'low', context: 'all_turns' },
    })
    expect(dropped.sort()).toEqual(['client_metadata', 'context_management', 'max_tool_calls', 'reasoning.context', 'truncation'])
    expect(translate({ input: 'x', truncation: 'disabled' }).dropped).toEqual([])
  })
})

describe('reasoning items', () => {
  const thinking = [{ type: 'thinking' as const, thinking: 'Let me check.', signature: 'EqQBCkYIBxgCKkA' }]

  test('sealed reasoning opens into the next assistant message’s thinking_blocks (Anthropic signatures kept) and reasoning_content', () => {
    const token = sealer.seal({ origin: 'anthropic', thinking_blocks: thinking, reasoning_content: 'Let me check.' })
    const { chat: out, dropped } = translate({
      input: [
        { role: 'user', content: 'Q' },
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: token },
        { type: 'function_call', call_id: 'call_1', name: 'f', arguments: '{}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'ok' },
      ],
    })
    expect(out.messages[1]).toEqual({
      role: 'assistant',
      content: null,
      thinking_blocks: thinking,
      reasoning_content: 'Let me check.',
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }],
    })
    expect(dropped).toEqual([])
  })

  test('a token that does not open (tampered, another key) is left out by name; the summary text is kept as reasoning_content', () => {
    const token = sealer.seal({ origin: 'anthropic', thinking_blocks: thinking })
    const tampered = token.slice(0, -4) + (token.endsWith('AAAA') ? 'BBBB' : 'AAAA')
    for (const bad of [tampered, reasoningSealer('other secret').seal({ origin: 'anthropic', thinking_blocks: thinking }), 'gAAAAABo-openai-own']) {
      const { chat: out, dropped } = translate({
        input: [
          { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Checked the docs.' }], encrypted_content: bad },
          { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Done.' }] },
        ],
      })
      expect(out.messages).toEqual([{ role: 'assistant', content: 'Done.', reasoning_content: 'Checked the docs.' }])
      expect(dropped).toEqual(['reasoning.encrypted_content'])
    }
  })

  test('reasoning with nothing after it in its turn is dropped by name, never attached to a later turn', () => {
    const { chat: out, dropped } = translate({
      input: [
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Hmm' }] },
        { role: 'user', content: 'Continue' },
      ],
    })
    expect(out.messages).toEqual([{ role: 'user', content: 'Continue' }])
    expect(dropped).toEqual(['reasoning'])
  })

  test('items of hosted tools’ earlier runs are dropped, named by type', () => {
    const { chat: out, dropped } = translate({
      input: [
        { role: 'user', content: 'News?' },
        { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'news' } } as unknown as InputItem,
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Here.' }] },
      ],
    })
    expect(out.messages).toEqual([
      { role: 'user', content: 'News?' },
      { role: 'assistant', content: 'Here.' },
    ])
    expect(dropped).toEqual(['web_search_call'])
  })
})

describe('what cannot be served', () => {
  test('background and conversation are refused for every target (400 unsupported_parameter naming them)', () => {
    expect(gatewayRefuses({ model: 'a', background: true })).toMatchObject({ code: 'unsupported_parameter', param: 'background' })
    expect(gatewayRefuses({ model: 'a', conversation: 'conv_1' })).toMatchObject({ code: 'unsupported_parameter', param: 'conversation' })
    expect(gatewayRefuses({ model: 'a', background: false, conversation: null })).toBeNull()
    const error = unsupported(gatewayRefuses({ model: 'a', background: true })!)
    expect([statusOf(error), error.type, error.code, error.param]).toEqual([400, 'invalid_request_error', 'unsupported_parameter', 'background'])
  })

  test('a hosted tool refused names tools.<i>', () => {
    expect(hostedToolRefused({ type: 'web_search', param: 'tools.1', tool: { type: 'web_search' } })).toMatchObject({
      code: 'unsupported_parameter',
      param: 'tools.1',
    })
  })

  test('content the pivot cannot carry: the exact path of the part or item', () => {
    const rows: [Partial<ResponsesRequest>, string, string][] = [
      [
        {
          input: [
            {
              role: 'user',
              content: [
                { type: 'input_text', text: 'a' },
                { type: 'input_image', file_id: 'file_1', detail: 'auto' },
              ],
            },
          ],
        },
        'unsupported_content',
        'input.0.content.1.file_id',
      ],
      [{ input: [{ role: 'user', content: [{ type: 'input_file', file_url: 'https://x/a.pdf' }] }] }, 'unsupported_content', 'input.0.content.0.file_url'],
      [{ input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file_2' }] }] }, 'unsupported_content', 'input.0.content.0.file_id'],
      [{ input: [{ role: 'system', content: [{ type: 'input_image', image_url: 'https://x/a.png' }] }] }, 'unsupported_content', 'input.0.content.0.type'],
      [{ input: [{ role: 'assistant', content: [{ type: 'input_image', image_url: 'https://x/a.png' }] }] }, 'unsupported_content', 'input.0.content.0.type'],
      [
        {
          input: [
            { role: 'user', content: 'x' },
            { type: 'function_call_output', call_id: 'c', output: [{ type: 'input_image', image_url: 'https://x/a.png' }] },
          ],
        },
        'unsupported_content',
        'input.1.output.0.type',
      ],
      [{ input: [{ role: 'user', content: 'x' }, { type: 'item_reference', id: 'msg_1' } as unknown as InputItem] }, 'unsupported_content', 'input.1.type'],
      [{ input: [{ type: 'compaction', encrypted_content: 'x' } as unknown as InputItem] }, 'unsupported_content', 'input.0.type'],
      [{ prompt: { id: 'pmpt_1' } }, 'unsupported_parameter', 'prompt'],
      [{ top_logprobs: 5 }, 'unsupported_parameter', 'top_logprobs'],
      [{ include: ['reasoning.encrypted_content', 'message.output_text.logprobs'] }, 'unsupported_parameter', 'include.1'],
      [{ text: { format: { type: 'grammar' } as never } }, 'unsupported_parameter', 'text.format.type'],
      [{ tool_choice: { type: 'web_search_preview' } }, 'unsupported_parameter', 'tool_choice'],
      [
        { tools: [{ type: 'namespace', name: 'n', description: '', tools: [{ type: 'function', name: 'a' }, { type: 'web_search' } as never] }] },
        'unsupported_parameter',
        'tools.0.tools.1.type',
      ],
      [
        {
          tools: [
            { type: 'function', name: 'crm__lookup' },
            { type: 'namespace', name: 'crm', description: '', tools: [{ type: 'function', name: 'lookup' }] },
          ],
        },
        'unsupported_parameter',
        'tools.1.tools.0',
      ],
    ]
    for (const [request, code, param] of rows) expect({ param, problem: refusal(request) }).toMatchObject({ param, problem: { code, param } })
  })

  test('items of a rebuilt conversation are checked too, named by previous_response_id', () => {
    expect(refusal({ input: 'x' }, [{ type: 'item_reference', id: 'x' } as unknown as InputItem])).toMatchObject({ param: 'previous_response_id' })
  })

  test('what the translation carries is not refused: a Codex-shaped request', () => {
    const request: Partial<ResponsesRequest> = {
      instructions: 'You are Codex.',
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: '<permissions>' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'List files' }] },
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'cgr1.x' },
        { type: 'function_call', call_id: 'call_1', name: 'shell', arguments: '{"command":["ls"]}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'a.txt' },
        { type: 'web_search_call', status: 'completed', action: { type: 'search', query: 'q' } } as unknown as InputItem,
      ],
      tools: [
        { type: 'function', name: 'shell', parameters: { type: 'object' }, strict: false },
        { type: 'custom', name: 'apply_patch', format: { type: 'grammar', syntax: 'lark', definition: 'start: x' } },
        { type: 'web_search' },
      ],
      tool_choice: 'auto',
      parallel_tool_calls: false,
      reasoning: { effort: 'medium', summary: 'auto' },
      store: false,
      stream: true,
      include: ['reasoning.encrypted_content'],
      prompt_cache_key: 'session-1',
      text: { verbosity: 'medium' },
      client_metadata: { x: 'y' },
    }
    expect(refusal(request)).toBeNull()
    expect(gatewayRefuses({ model: 'a', ...request })).toBeNull()
  })
})
