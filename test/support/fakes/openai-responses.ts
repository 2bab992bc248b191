/**
 * A fake OpenAI Responses API (the upstream of an openai-kind upstream with `responses = "native"`),
 * written from OpenAI's published reference:
 *   - Create a model response (request fields, input items, tools, `text.format`, `reasoning`,
 *     `include`, `store`, `previous_response_id`): https://platform.openai.com/docs/api-reference/responses/create
 *   - The response object and its output items (`message` with `output_text` parts, `function_call`,
 *     `custom_tool_call`, `reasoning` with `summary` and `encrypted_content`), usage with
 *     `input_tokens_details.cached_tokens` and `output_tokens_details.reasoning_tokens`:
 *     https://platform.openai.com/docs/api-reference/responses/object
 *   - Streaming events (`response.created`, `.in_progress`, `.output_item.added`,
 *     `.reasoning_summary_part.added`, `.reasoning_summary_text.delta`/`.done`,
 *     `.content_part.added`, `.output_text.delta`/`.done`, `.function_call_arguments.delta`/`.done`,
 *     `.custom_tool_call_input.delta`/`.done`, `.output_item.done`, `.completed`, each with its
 *     `sequence_number` from 0, the SSE `event:` line naming the type):
 *     https://platform.openai.com/docs/api-reference/responses-streaming
 *   - Retrieve, delete, list input items, count input tokens:
 *     https://platform.openai.com/docs/api-reference/responses/get,
 *     https://platform.openai.com/docs/api-reference/responses/delete,
 *     https://platform.openai.com/docs/api-reference/responses/input-items,
 *     https://platform.openai.com/docs/api-reference/responses/input-tokens
 *   - Errors (`{error: {message, type, param, code}}`): https://platform.openai.com/docs/guides/error-codes
 * with the shapes cross-checked against OpenAI's OpenAPI document (test/fixtures/openai/openapi/).
 *
 * Strict where OpenAI is and a relay could go wrong: the Bearer key; an unknown top-level parameter
 * (400 `unknown_parameter`); a `function_call_output` whose `call_id` answers no `function_call` of
 * the conversation; a `reasoning` item whose `encrypted_content` this server did not issue, or that
 * is passed by id only while it was not stored (`store: false`); a `function_call` it issued with a
 * reasoning item, passed back by id without that reasoning item; an unknown `previous_response_id`
 * (404). Answers deterministically:
 *   - function (or custom) tools given and no tool output in the conversation yet: a call of the
 *     tool a user text names with `[[call:NAME]]`, else the first of `preferTools` offered, else the
 *     first function tool, with `toolInput(name)` as its arguments (a custom tool's input is
 *     `toolInput(name).input`);
 *   - `text.format` json_schema: the text is a JSON value of that schema (json_object: `{}`);
 *   - otherwise: `marker`, naming the last tool output and the last user text;
 *   - with `reasoning.effort` (not `none`): a reasoning item first, its summary text when
 *     `reasoning.summary` is asked for, and `encrypted_content` when `include` asks for it.
 * Responses with `store` not false are kept (previous_response_id, GET, DELETE, input items).
 * Every request is recorded (`calls`).
 */
import { createHmac } from 'node:crypto'
import { pieces, recordingServer, type RecordedCall, roughTokens, sampleOf } from './common'

export const RESPONSES_MARKER = 'chatgate-responses-final'

export interface FakeOpenAIResponsesOptions {
  /** The Bearer key it accepts (default `sk-openai-fake`). */
  apiKey?: string
  /** Tools it calls first when offered, in this order (default: none; the first function tool). */
  preferTools?: string[]
  /** The arguments of a call to a tool (default `{}`). */
  toolInput?: (name: string) => Record<string, unknown>
  /** The text its final answers carry (default RESPONSES_MARKER). */
  marker?: string
}

export interface FakeOpenAIResponses {
  /** The base URL an upstream of kind "openai" takes (with `/v1`). */
  url: string
  calls: RecordedCall[]
  /** The POST /v1/responses calls. */
  createCalls(): RecordedCall[]
  /** The responses it answered with, in order (streamed ones too). */
  responses: Json[]
  stop(): void
}

type Json = Record<string, any>

/** The request parameters of "Create a model response" (and `client_metadata`, which OpenAI takes from Codex). */
const REQUEST_FIELDS = new Set([
  'background',
  'client_metadata',
  'context_management',
  'conversation',
  'include',
  'input',
  'instructions',
  'max_output_tokens',
  'max_tool_calls',
  'metadata',
  'model',
  'parallel_tool_calls',
  'previous_response_id',
  'prompt',
  'prompt_cache_key',
  'prompt_cache_retention',
  'reasoning',
  'safety_identifier',
  'service_tier',
  'store',
  'stream',
  'stream_options',
  'temperature',
  'text',
  'tool_choice',
  'tools',
  'top_logprobs',
  'top_p',
  'truncation',
  'user',
])

const EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh']

const error = (status: number, message: string, param: string | null = null, code: string | null = null, type = 'invalid_request_error') =>
  Response.json({ error: { message, type, param, code } }, { status })

/** The text of a message's content (a string, or input_text / output_text parts). */
const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((p: Json) => (p.type === 'input_text' || p.type === 'output_text' ? p.text : '')).join('')
      : ''

/** A tool output's text (a string, or a list of input_text parts). */
const outputText = (output: unknown): string => (typeof output === 'string' ? output : textOf(output))

const asItems = (input: unknown): Json[] => (typeof input === 'string' ? [{ type: 'message', role: 'user', content: input }] : ((input ?? []) as Json[]))

export function fakeOpenAIResponses(options: FakeOpenAIResponsesOptions = {}): FakeOpenAIResponses {
  const apiKey = options.apiKey ?? 'sk-openai-fake'
  const marker = options.marker ?? RESPONSES_MARKER
  const secret = `fake-responses-${crypto.randomUUID()}`
  const seal = (id: string, text: string) =>
    `fakeenc_${Buffer.from(JSON.stringify({ id, text })).toString('base64url')}.${createHmac('sha256', secret)
      .update(id + text)
      .digest('base64url')}`
  const opens = (token: string) => {
    const [payload, mac] = token.replace(/^fakeenc_/, '').split('.')
    try {
      const { id, text } = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString()) as { id: string; text: string }
      return (
        token.startsWith('fakeenc_') &&
        mac ===
          createHmac('sha256', secret)
            .update(id + text)
            .digest('base64url')
      )
    } catch {
      return false
    }
  }
  let counter = 0
  const responses: Json[] = []
  /** Kept responses (store not false): their whole conversation, input and output. */
  const stored = new Map<string, { response: Json; input: Json[] }>()
  /** Reasoning items kept by id (their response was stored). */
  const storedReasoning = new Set<string>()
  /** The reasoning item each function call it issued came with: the call goes back with it. */
  const reasoningOfCall = new Map<string, string>()

  /** The whole conversation: the previous responses' input and output, then this input. */
  function conversation(previousId: string | null): Json[] | null {
    if (!previousId) return []
    const previous = stored.get(previousId)
    if (!previous) return null
    return [...previous.input, ...previous.response.output]
  }

  function problem(body: Json, items: Json[]): Response | null {
    const unknown = Object.keys(body).find((key) => !REQUEST_FIELDS.has(key))
    if (unknown !== undefined) return error(400, `Unknown parameter: '${unknown}'.`, unknown, 'unknown_parameter')
    if (typeof body.model !== 'string') return error(400, "Missing required parameter: 'model'.", 'model', 'missing_required_parameter')
    if (body.reasoning?.effort != null && !EFFORTS.includes(body.reasoning.effort)) {
      return error(
        400,
        `Invalid value: '${body.reasoning.effort}'. Supported values are: ${EFFORTS.map((e) => `'${e}'`).join(', ')}.`,
        'reasoning.effort',
        'invalid_value',
      )
    }
    const calls = new Set<string>()
    const reasoningIds = new Set<string>()
    for (const [i, item] of items.entries()) {
      const type = item.type ?? (item.role ? 'message' : undefined)
      if (type === 'reasoning') {
        if (item.encrypted_content != null && !opens(item.encrypted_content)) {
          return error(400, 'The encrypted content for item could not be verified.', `input[${i}].encrypted_content`, 'invalid_encrypted_content')
        }
        if (item.encrypted_content == null && !storedReasoning.has(item.id)) {
          return error(
            404,
            `Item with id '${item.id}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`,
            'input',
          )
        }
        reasoningIds.add(item.id)
      }
      if (type === 'function_call' || type === 'custom_tool_call') {
        calls.add(item.call_id)
        const needed = item.id ? reasoningOfCall.get(item.id) : undefined
        if (needed && !reasoningIds.has(needed)) {
          return error(400, `Item '${item.id}' of type '${type}' was provided without its required 'reasoning' item: '${needed}'.`, 'input')
        }
      }
      if ((type === 'function_call_output' || type === 'custom_tool_call_output') && !calls.has(item.call_id)) {
        return error(400, `No tool call found for function call output with call_id ${item.call_id}.`, 'input')
      }
      if (type === 'message' && !['user', 'assistant', 'system', 'developer'].includes(item.role)) {
        return error(
          400,
          `Invalid value: '${item.role}'. Supported values are: 'assistant', 'system', 'developer', and 'user'.`,
          `input[${i}].role`,
          'invalid_value',
        )
      }
    }
    for (const [i, tool] of ((body.tools ?? []) as Json[]).entries()) {
      if (tool.type === 'function' && (typeof tool.name !== 'string' || tool.function !== undefined)) {
        return error(400, `Missing required parameter: 'tools[${i}].name'.`, `tools[${i}].name`, 'missing_required_parameter')
      }
    }
    const format = body.text?.format
    if (format?.type === 'json_schema' && (typeof format.name !== 'string' || typeof format.schema !== 'object')) {
      return error(400, "Missing required parameter: 'text.format.name'.", 'text.format.name', 'missing_required_parameter')
    }
    return null
  }

  /** The tool to call, or null: see the header. */
  function toolToCall(body: Json, items: Json[]): Json | null {
    const tools = ((body.tools ?? []) as Json[]).filter((t) => t.type === 'function' || t.type === 'custom')
    const answered = items.some((i) => i.type === 'function_call_output' || i.type === 'custom_tool_call_output')
    if (tools.length === 0 || answered || body.tool_choice === 'none') return null
    const userText = items.map((i) => ((i.type ?? 'message') === 'message' && i.role === 'user' ? textOf(i.content) : '')).join(' ')
    const asked = /\[\[call:([A-Za-z0-9_.-]+)\]\]/.exec(userText)?.[1]
    const forced = body.tool_choice?.type === 'function' ? body.tool_choice.name : undefined
    return (
      tools.find((t) => t.name === (forced ?? asked)) ??
      (options.preferTools ?? []).map((name) => tools.find((t) => t.name === name)).find(Boolean) ??
      tools.find((t) => t.type === 'function') ??
      null
    )
  }

  function answer(body: Json, items: Json[]): Json {
    const n = ++counter
    const output: Json[] = []
    const effort = body.reasoning?.effort
    let reasoningTokens = 0
    let reasoningId: string | null = null
    if (effort != null && effort !== 'none') {
      const text = `fake-responses reasoned ${n} at ${effort} effort`
      reasoningId = `rs_fake_${n}`
      const item: Json = { id: reasoningId, type: 'reasoning', summary: body.reasoning.summary ? [{ type: 'summary_text', text }] : [] }
      if ((body.include ?? []).includes('reasoning.encrypted_content')) item.encrypted_content = seal(reasoningId, text)
      output.push(item)
      reasoningTokens = roughTokens(text)
    }
    const tool = toolToCall(body, items)
    if (tool) {
      const input = options.toolInput?.(tool.name) ?? {}
      const id = `${tool.type === 'custom' ? 'ctc' : 'fc'}_fake_${n}`
      output.push(
        tool.type === 'custom'
          ? { id, type: 'custom_tool_call', status: 'completed', call_id: `call_fake_${n}`, name: tool.name, input: String(input.input ?? '') }
          : { id, type: 'function_call', status: 'completed', call_id: `call_fake_${n}`, name: tool.name, arguments: JSON.stringify(input) },
      )
      if (reasoningId) reasoningOfCall.set(id, reasoningId)
    } else {
      const format = body.text?.format
      let text: string
      if (format?.type === 'json_schema') text = JSON.stringify(sampleOf(format.schema))
      else if (format?.type === 'json_object') text = '{}'
      else {
        const lastOutput = items.findLast((i) => i.type === 'function_call_output' || i.type === 'custom_tool_call_output')
        const lastUser = items.findLast((i) => (i.type ?? 'message') === 'message' && i.role === 'user')
        text = marker + (lastOutput ? ` (the tool said: ${outputText(lastOutput.output)})` : '') + ` heard: ${textOf(lastUser?.content).slice(-200)}`
      }
      output.push({
        id: `msg_fake_${n}`,
        type: 'message',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
      })
    }
    const inputTokens = roughTokens(JSON.stringify(items) + (body.instructions ?? ''))
    const outputTokens = roughTokens(JSON.stringify(output)) + reasoningTokens
    const response: Json = {
      id: `resp_fake_${n}_${crypto.randomUUID().replaceAll('-', '')}`,
      object: 'response',
      created_at: 1_764_000_000 + n,
      status: 'completed',
      background: false,
      completed_at: 1_764_000_001 + n,
      error: null,
      incomplete_details: null,
      instructions: body.instructions ?? null,
      max_output_tokens: body.max_output_tokens ?? null,
      max_tool_calls: body.max_tool_calls ?? null,
      model: body.model,
      output,
      parallel_tool_calls: body.parallel_tool_calls ?? true,
      previous_response_id: body.previous_response_id ?? null,
      prompt_cache_key: body.prompt_cache_key ?? null,
      reasoning: { effort: effort ?? null, summary: body.reasoning?.summary ?? null },
      safety_identifier: body.safety_identifier ?? null,
      service_tier: 'default',
      store: body.store !== false,
      temperature: body.temperature ?? 1,
      text: { format: body.text?.format ?? { type: 'text' }, verbosity: body.text?.verbosity ?? 'medium' },
      tool_choice: body.tool_choice ?? 'auto',
      tools: body.tools ?? [],
      top_logprobs: body.top_logprobs ?? 0,
      top_p: body.top_p ?? 1,
      truncation: body.truncation ?? 'disabled',
      usage: {
        input_tokens: inputTokens,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: outputTokens,
        output_tokens_details: { reasoning_tokens: reasoningTokens },
        total_tokens: inputTokens + outputTokens,
      },
      user: body.user ?? null,
      metadata: body.metadata ?? {},
    }
    responses.push(response)
    return response
  }

  /** The event sequence of the streaming reference for `response`, numbered from 0. */
  function stream(response: Json): Response {
    const events: Json[] = []
    const push = (type: string, data: Json) => events.push({ type, ...data, sequence_number: events.length })
    const pending = { ...response, status: 'in_progress', completed_at: null, output: [], usage: null }
    push('response.created', { response: pending })
    push('response.in_progress', { response: pending })
    response.output.forEach((item: Json, output_index: number) => {
      const item_id = item.id
      if (item.type === 'reasoning') {
        push('response.output_item.added', { output_index, item: { ...item, summary: [], encrypted_content: undefined } })
        item.summary.forEach((part: Json, summary_index: number) => {
          push('response.reasoning_summary_part.added', { item_id, output_index, summary_index, part: { type: 'summary_text', text: '' } })
          for (const delta of pieces(part.text)) push('response.reasoning_summary_text.delta', { item_id, output_index, summary_index, delta })
          push('response.reasoning_summary_text.done', { item_id, output_index, summary_index, text: part.text })
          push('response.reasoning_summary_part.done', { item_id, output_index, summary_index, part })
        })
      } else if (item.type === 'function_call') {
        push('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', arguments: '' } })
        for (const delta of pieces(item.arguments)) push('response.function_call_arguments.delta', { item_id, output_index, delta })
        push('response.function_call_arguments.done', { item_id, output_index, name: item.name, arguments: item.arguments })
      } else if (item.type === 'custom_tool_call') {
        push('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', input: '' } })
        for (const delta of pieces(item.input)) push('response.custom_tool_call_input.delta', { item_id, output_index, delta })
        push('response.custom_tool_call_input.done', { item_id, output_index, input: item.input })
      } else {
        const part = item.content[0]
        push('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } })
        push('response.content_part.added', { item_id, output_index, content_index: 0, part: { ...part, text: '' } })
        for (const delta of pieces(part.text)) push('response.output_text.delta', { item_id, output_index, content_index: 0, delta, logprobs: [] })
        push('response.output_text.done', { item_id, output_index, content_index: 0, text: part.text, logprobs: [] })
        push('response.content_part.done', { item_id, output_index, content_index: 0, part })
      }
      push('response.output_item.done', { output_index, item })
    })
    push('response.completed', { response })
    const body = events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join('')
    return new Response(body, { headers: { 'content-type': 'text/event-stream; charset=utf-8', 'x-request-id': `req_fake_${counter}` } })
  }

  function create(call: RecordedCall): Response {
    const body = call.body as Json | null
    if (body === null || typeof body !== 'object') return error(400, 'We could not parse the JSON body of your request.')
    const history = conversation(body.previous_response_id ?? null)
    if (history === null) {
      return error(404, `Previous response with id '${body.previous_response_id}' not found.`, 'previous_response_id', 'previous_response_not_found')
    }
    const input = asItems(body.input)
    const items = [...history, ...input]
    const refused = problem(body, items)
    if (refused) return refused
    const response = answer(body, items)
    if (body.store !== false) {
      stored.set(response.id, { response, input: items })
      for (const item of response.output) if (item.type === 'reasoning') storedReasoning.add(item.id)
    }
    return body.stream === true ? stream(response) : Response.json(response, { headers: { 'x-request-id': `req_fake_${counter}` } })
  }

  const server = recordingServer((call) => {
    if (call.headers.get('authorization') !== `Bearer ${apiKey}`) {
      return error(401, 'Incorrect API key provided.', null, 'invalid_api_key')
    }
    if (call.method === 'POST' && call.path === '/v1/responses') return create(call)
    if (call.method === 'POST' && call.path === '/v1/responses/input_tokens') {
      return Response.json({ object: 'response.input_tokens', input_tokens: roughTokens(JSON.stringify(call.body?.input ?? '')) })
    }
    const match = /^\/v1\/responses\/([^/]+)(\/input_items)?$/.exec(call.path)
    if (match) {
      const held = stored.get(match[1]!)
      if (!held) return error(404, `Response with id '${match[1]}' not found.`, null, null)
      if (call.method === 'GET' && match[2]) {
        const data = [...held.input].reverse()
        return Response.json({ object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: false })
      }
      if (call.method === 'GET') return Response.json(held.response)
      if (call.method === 'DELETE') {
        stored.delete(match[1]!)
        return Response.json({ id: match[1], object: 'response.deleted', deleted: true })
      }
    }
    if (call.method === 'GET' && call.path === '/v1/models') {
      return Response.json({ object: 'list', data: [{ id: 'gpt-5.6', object: 'model', created: 1_764_000_000, owned_by: 'system' }] })
    }
    return error(404, `Invalid URL (${call.method} ${call.path})`)
  })

  return {
    url: `${server.origin}/v1`,
    calls: server.calls,
    createCalls: () => server.calls.filter((c) => c.method === 'POST' && c.path === '/v1/responses'),
    responses,
    stop: server.stop,
  }
}
