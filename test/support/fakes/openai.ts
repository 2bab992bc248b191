/**
 * A fake OpenAI-compatible chat completions server, written from OpenAI's published reference:
 *   - Create chat completion (request fields, message and content-part shapes, tools, response_format):
 *     https://platform.openai.com/docs/api-reference/chat/create
 *   - The chat completion object: https://platform.openai.com/docs/api-reference/chat/object
 *   - Streaming chunks (and the final usage chunk of `stream_options.include_usage`):
 *     https://platform.openai.com/docs/api-reference/chat/streaming
 *   - Errors: https://platform.openai.com/docs/guides/error-codes
 * and, for reasoning, the `reasoning_content` field of OpenAI-compatible reasoning servers (DeepSeek,
 * https://api-docs.deepseek.com/guides/reasoning_model; vLLM,
 * https://docs.vllm.ai/en/latest/features/reasoning_outputs.html): answers carry it beside `content`
 * and streams as `delta.reasoning_content`; it goes back on the assistant message in a tool loop.
 *
 * Strict like OpenAI: an unknown top-level field is 400 "Unrecognized request argument supplied",
 * an unknown key on a message, content part or tool is 400 "Additional properties are not allowed"
 * (so an Anthropic-only field such as `cache_control`, `thinking` or `output_config` that leaked
 * through a translation fails loudly), tool messages must answer a call of an earlier assistant
 * turn. Answers deterministically:
 *   - function tools given and no `tool` message yet: a call of `Bash` (running `bashCommand`) if
 *     that tool is there, else of the first tool, with `toolInput(name)`; a user text containing
 *     `[[call:NAME]]` picks the tool NAME instead (if it is offered);
 *   - `response_format` json_schema: the content is a JSON value of that schema;
 *   - otherwise: `marker`, naming the last tool result and the last user text;
 *   - with `reasoning_effort`: `reasoning_content` first.
 * Every request is recorded (`calls`).
 */
import { pieces, recordingServer, type RecordedCall, roughTokens, sampleOf, sseResponse } from './common'

export const OPENAI_MARKER = 'chatgate-openai-final'

export interface FakeOpenAIOptions {
  /** The Bearer key it accepts (default `sk-openai-fake`). */
  apiKey?: string
  /** The command its Bash tool calls run (default `echo chatgate-tool-ran`). */
  bashCommand?: string
  /** The arguments of a call to any other tool (default `{}`). */
  toolInput?: (name: string) => Record<string, unknown>
  /** The text its final answers carry (default OPENAI_MARKER). */
  marker?: string
}

export interface FakeOpenAI {
  /** The base URL an upstream of kind "openai" takes (with `/v1`). */
  url: string
  calls: RecordedCall[]
  /** The POST /v1/chat/completions calls. */
  chatCalls(): RecordedCall[]
  /** The reasoning it answered with, in order. */
  reasonings: string[]
  /** The completions it answered with, in order (streamed ones too). */
  completions: any[]
  stop(): void
}

type Json = Record<string, any>

const REQUEST_FIELDS = new Set([
  'model',
  'messages',
  'audio',
  'frequency_penalty',
  'function_call',
  'functions',
  'logit_bias',
  'logprobs',
  'max_completion_tokens',
  'max_tokens',
  'metadata',
  'modalities',
  'n',
  'parallel_tool_calls',
  'prediction',
  'presence_penalty',
  'prompt_cache_key',
  'reasoning_effort',
  'response_format',
  'safety_identifier',
  'seed',
  'service_tier',
  'stop',
  'store',
  'stream',
  'stream_options',
  'temperature',
  'tool_choice',
  'tools',
  'top_logprobs',
  'top_p',
  'user',
  'verbosity',
  'web_search_options',
])

const MESSAGE_FIELDS: Record<string, Set<string>> = {
  system: new Set(['role', 'content', 'name']),
  developer: new Set(['role', 'content', 'name']),
  user: new Set(['role', 'content', 'name']),
  // `reasoning_content`: the reasoning servers' field (see above), sent back in a tool loop.
  assistant: new Set(['role', 'content', 'name', 'tool_calls', 'refusal', 'audio', 'function_call', 'reasoning_content']),
  tool: new Set(['role', 'content', 'tool_call_id']),
}

const PART_FIELDS: Record<string, Set<string>> = {
  text: new Set(['type', 'text']),
  image_url: new Set(['type', 'image_url']),
  input_audio: new Set(['type', 'input_audio']),
  file: new Set(['type', 'file']),
  refusal: new Set(['type', 'refusal']),
}

const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh']

const error = (status: number, message: string, type = 'invalid_request_error', param: string | null = null, code: string | null = null) =>
  Response.json({ error: { message, type, param, code } }, { status })

const extra = (value: Json, allowed: Set<string>) => Object.keys(value).find((key) => !allowed.has(key))

const textOf = (content: unknown): string =>
  typeof content === 'string' ? content : Array.isArray(content) ? content.map((p: Json) => (p.type === 'text' ? p.text : '')).join('') : ''

export function fakeOpenAI(options: FakeOpenAIOptions = {}): FakeOpenAI {
  const apiKey = options.apiKey ?? 'sk-openai-fake'
  const bashCommand = options.bashCommand ?? 'echo chatgate-tool-ran'
  const marker = options.marker ?? OPENAI_MARKER
  const reasonings: string[] = []
  const completions: any[] = []
  /** The reasoning each tool call id was issued with: it must come back on the assistant message of that call. */
  const reasoningOf = new Map<string, string>()
  let counter = 0

  function problem(body: Json): Response | null {
    const unknown = Object.keys(body).find((key) => !REQUEST_FIELDS.has(key))
    if (unknown !== undefined) return error(400, `Unrecognized request argument supplied: ${unknown}`)
    if (typeof body.model !== 'string')
      return error(400, "Missing required parameter: 'model'.", 'invalid_request_error', 'model', 'missing_required_parameter')
    if (!Array.isArray(body.messages) || body.messages.length === 0) {
      return error(400, "Invalid 'messages': empty array. Expected an array with minimum length 1.", 'invalid_request_error', 'messages', 'empty_array')
    }
    const calls = new Set<string>()
    for (const [i, message] of (body.messages as Json[]).entries()) {
      const allowed = MESSAGE_FIELDS[message.role]
      if (!allowed)
        return error(
          400,
          `Invalid value: '${message.role}'. Supported values are: 'system', 'assistant', 'user', 'tool', 'function', and 'developer'.`,
          'invalid_request_error',
          `messages.[${i}].role`,
          'invalid_value',
        )
      const key = extra(message, allowed)
      if (key !== undefined)
        return error(400, `Additional properties are not allowed ('${key}' was unexpected) - 'messages.${i}'`, 'invalid_request_error', `messages.[${i}]`)
      if (Array.isArray(message.content)) {
        for (const [j, part] of (message.content as Json[]).entries()) {
          const fields = PART_FIELDS[part.type]
          if (!fields)
            return error(
              400,
              `Invalid value: '${part.type}'. Supported values are: 'text', 'image_url', 'input_audio', 'refusal', and 'file'.`,
              'invalid_request_error',
              `messages.[${i}].content.[${j}].type`,
              'invalid_value',
            )
          const bad = extra(part, fields)
          if (bad !== undefined) return error(400, `Additional properties are not allowed ('${bad}' was unexpected) - 'messages.${i}.content.${j}'`)
        }
      } else if (typeof message.content !== 'string' && !(message.role === 'assistant' && message.content == null && message.tool_calls)) {
        return error(
          400,
          `Invalid type for 'messages.[${i}].content': expected one of a string or array of objects.`,
          'invalid_request_error',
          `messages.[${i}].content`,
        )
      }
      for (const call of message.tool_calls ?? []) {
        calls.add(call.id)
        // DeepSeek's thinking mode: in a tool loop, the reasoning_content of the call's turn goes back with it.
        const issued = reasoningOf.get(call.id)
        if (issued !== undefined && message.reasoning_content !== issued) {
          return error(
            400,
            `Missing \`reasoning_content\` field in the assistant message at message index ${i}. The reasoning_content of a tool call turn must be passed back.`,
            'invalid_request_error',
            `messages.[${i}].reasoning_content`,
          )
        }
      }
      if (message.role === 'tool' && !calls.has(message.tool_call_id)) {
        return error(
          400,
          `Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.`,
          'invalid_request_error',
          `messages.[${i}].role`,
        )
      }
    }
    if (Array.isArray(body.tools) && body.tools.length === 0) {
      return error(
        400,
        "Invalid 'tools': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        'invalid_request_error',
        'tools',
        'empty_array',
      )
    }
    for (const [i, tool] of ((body.tools ?? []) as Json[]).entries()) {
      const key = extra(tool, new Set(['type', 'function']))
      if (key !== undefined || tool.type !== 'function')
        return error(400, `Additional properties are not allowed ('${key ?? 'type'}' was unexpected) - 'tools.${i}'`)
      const fnKey = extra(tool.function ?? {}, new Set(['name', 'description', 'parameters', 'strict']))
      if (fnKey !== undefined) return error(400, `Additional properties are not allowed ('${fnKey}' was unexpected) - 'tools.${i}.function'`)
      if (!/^[a-zA-Z0-9_-]{1,64}$/.test(tool.function?.name ?? '')) return error(400, `Invalid 'tools[${i}].function.name': string does not match pattern.`)
    }
    if (body.reasoning_effort !== undefined && !REASONING_EFFORTS.includes(body.reasoning_effort)) {
      return error(
        400,
        `Invalid value: '${body.reasoning_effort}'. Supported values are: ${REASONING_EFFORTS.map((e) => `'${e}'`).join(', ')}.`,
        'invalid_request_error',
        'reasoning_effort',
        'invalid_value',
      )
    }
    const format = body.response_format
    if (
      format !== undefined &&
      format.type === 'json_schema' &&
      (typeof format.json_schema?.name !== 'string' || typeof format.json_schema?.schema !== 'object')
    ) {
      return error(400, "Missing required parameter: 'response_format.json_schema.name'.", 'invalid_request_error', 'response_format.json_schema.name')
    }
    return null
  }

  function answer(body: Json) {
    const n = ++counter
    const messages = body.messages as Json[]
    const tools = ((body.tools ?? []) as Json[]).filter((t) => t.type === 'function')
    const hasResult = messages.some((m) => m.role === 'tool')
    const message: Json = { role: 'assistant', content: null, refusal: null }
    if (body.reasoning_effort !== undefined && body.reasoning_effort !== 'none') {
      message.reasoning_content = `fake-openai reasoned ${n} at ${body.reasoning_effort} effort`
      reasonings.push(message.reasoning_content)
    }
    if (tools.length > 0 && !hasResult && body.tool_choice !== 'none') {
      const asked = /\[\[call:([A-Za-z0-9_-]+)\]\]/.exec(messages.map((m) => (m.role === 'user' ? textOf(m.content) : '')).join(' '))?.[1]
      const tool = tools.find((t) => t.function.name === asked) ?? tools.find((t) => t.function.name === 'Bash') ?? tools[0]!
      const name = tool.function.name as string
      const args = name === 'Bash' ? { command: bashCommand, description: 'Print a marker' } : (options.toolInput?.(name) ?? {})
      message.tool_calls = [{ id: `call_fake_${n}`, type: 'function', function: { name, arguments: JSON.stringify(args) } }]
      if (message.reasoning_content) reasoningOf.set(`call_fake_${n}`, message.reasoning_content)
    } else if (body.response_format?.type === 'json_schema') {
      message.content = JSON.stringify(sampleOf(body.response_format.json_schema.schema))
    } else {
      const lastTool = messages.findLast((m) => m.role === 'tool')
      const lastUser = messages.findLast((m) => m.role === 'user')
      message.content = `${marker}` + (lastTool ? ` (the tool said: ${textOf(lastTool.content)})` : '') + ` heard: ${textOf(lastUser?.content).slice(-200)}`
    }
    const reasoningTokens = message.reasoning_content ? roughTokens(message.reasoning_content) : 0
    const completionTokens = roughTokens(JSON.stringify(message)) + reasoningTokens
    const prompt = roughTokens(JSON.stringify(messages))
    const completion = {
      id: `chatcmpl-fake-${n}`,
      object: 'chat.completion',
      created: 1_764_000_000,
      model: body.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: message.tool_calls ? 'tool_calls' : 'stop' }],
      usage: {
        prompt_tokens: prompt,
        completion_tokens: completionTokens,
        total_tokens: prompt + completionTokens,
        prompt_tokens_details: { cached_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: reasoningTokens },
      },
    }
    completions.push(completion)
    return completion
  }

  function stream(body: Json, completion: ReturnType<typeof answer>): Response {
    const { id, created, model } = completion
    const choice = completion.choices[0]!
    const chunk = (delta: Json, finish: string | null = null) => ({
      data: { id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] },
    })
    const events: { data: unknown }[] = [chunk({ role: 'assistant', content: '', refusal: null })]
    const message = choice.message
    for (const piece of message.reasoning_content ? pieces(message.reasoning_content) : []) events.push(chunk({ reasoning_content: piece }))
    if (message.tool_calls) {
      message.tool_calls.forEach((call: Json, index: number) => {
        events.push(chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] }))
        for (const piece of pieces(call.function.arguments)) events.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }))
      })
    } else {
      for (const piece of pieces(message.content ?? '')) events.push(chunk({ content: piece }))
    }
    events.push(chunk({}, choice.finish_reason))
    if (body.stream_options?.include_usage === true)
      events.push({ data: { id, object: 'chat.completion.chunk', created, model, choices: [], usage: completion.usage } })
    events.push({ data: '[DONE]' })
    return sseResponse(events)
  }

  const server = recordingServer((call) => {
    if (call.headers.get('authorization') !== `Bearer ${apiKey}`) {
      return error(401, 'Incorrect API key provided.', 'invalid_request_error', null, 'invalid_api_key')
    }
    if (call.method === 'POST' && call.path === '/v1/chat/completions') {
      const body = call.body as Json | null
      if (body === null || typeof body !== 'object') return error(400, 'We could not parse the JSON body of your request.')
      const refused = problem(body)
      if (refused) return refused
      const completion = answer(body)
      return body.stream === true ? stream(body, completion) : Response.json(completion)
    }
    if (call.method === 'GET' && call.path === '/v1/models') {
      return Response.json({ object: 'list', data: [{ id: 'gpt-4o', object: 'model', created: 1_715_367_049, owned_by: 'system' }] })
    }
    return error(404, `Invalid URL (${call.method} ${call.path})`)
  })

  return {
    url: `${server.origin}/v1`,
    calls: server.calls,
    chatCalls: () => server.calls.filter((c) => c.method === 'POST' && c.path === '/v1/chat/completions'),
    reasonings,
    completions,
    stop: server.stop,
  }
}
