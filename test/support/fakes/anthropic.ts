/**
 * A fake Anthropic Messages API, written from Anthropic's published reference:
 *   - Messages: https://docs.anthropic.com/en/api/messages
 *   - Streaming events: https://docs.anthropic.com/en/api/messages-streaming
 *   - Errors (shape, statuses): https://docs.anthropic.com/en/api/errors
 *   - Token counting: https://docs.anthropic.com/en/api/messages-count-tokens
 *   - Models list: https://docs.anthropic.com/en/api/models-list
 *   - Extended thinking (signatures must come back unchanged): https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking
 *   - Message threads: as `@anthropic-ai/sdk` 1.14.0 speaks them (src/lib/internal/threads/ThreadState.ts,
 *     the `thread` param and the Thread* errors in src/resources/messages/messages.ts): `thread: {type:
 *     "create"}` holds the conversation under the answer's id; `{type: "continue", previous_message_id}`
 *     sends only the new messages and no `system`/`tools`; beta `message-threads-2026-08-12`; an
 *     unknown id is 404 with `error.details.error_code: "thread_not_found"`.
 *
 * It checks each request the way Anthropic does where a translation could go wrong (the key, the
 * version header, roles, tool results answering the previous turn's tool_use, thinking blocks
 * carrying a signature this server issued), and answers deterministically:
 *   - tools given and no tool_result anywhere in the conversation: a tool_use of `Bash` (running
 *     `bashCommand`) if that tool is there, else of the first tool, with `toolInput(name)`; a user
 *     text containing `[[call:NAME]]` picks the tool NAME instead (if it is offered);
 *   - `output_config.format` of type json_schema: one text block, a JSON value of that schema;
 *   - otherwise: text with `marker`, naming the last tool result (if any) and the last user text;
 *   - with `thinking` enabled or adaptive: a signed thinking block first.
 * Every request is recorded (`calls`), so tests can assert what reached the upstream.
 */
import { createHmac } from 'node:crypto'
import { pieces, recordingServer, type RecordedCall, roughTokens, sampleOf, sseResponse } from './common'

export const ANTHROPIC_MARKER = 'chatgate-anthropic-final'
export const THREADS_BETA = 'message-threads-2026-08-12'

export interface FakeAnthropicOptions {
  /** The `x-api-key` it accepts (default `sk-ant-fake`). */
  apiKey?: string
  /** The command its Bash tool calls run (default `echo chatgate-tool-ran`). */
  bashCommand?: string
  /** The input of a call to any other tool (default `{}`). */
  toolInput?: (name: string) => Record<string, unknown>
  /** The text its final answers carry (default ANTHROPIC_MARKER). */
  marker?: string
  /** A response to give instead of the normal one (a failure the test wants), or null. */
  refuse?: (call: RecordedCall) => Response | null
  /** A name for its ids and thinking, to tell two fakes apart (default `a`). */
  name?: string
}

export interface FakeAnthropic {
  /** The base URL an upstream of kind "anthropic" takes (with `/v1`). */
  url: string
  calls: RecordedCall[]
  /** The POST /v1/messages calls (not count_tokens). */
  messageCalls(): RecordedCall[]
  /** Ids of the messages it answered, in order. */
  answered: string[]
  stop(): void
}

type Block = Record<string, any>
type Message = { role: string; content: string | Block[] }

const error = (status: number, type: string, message: string, details?: Record<string, unknown>) =>
  Response.json({ type: 'error', error: { type, message, ...(details ? { details } : {}) }, request_id: `req_fake_${status}` }, { status })
const invalid = (message: string, details?: Record<string, unknown>) => error(400, 'invalid_request_error', message, details)

const blocksOf = (content: string | Block[]): Block[] => (typeof content === 'string' ? [{ type: 'text', text: content }] : content)
const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content
          .map((b: Block) => (b.type === 'text' ? b.text : b.type === 'tool_reference' ? `[tool ${b.tool_name}]` : ''))
          .filter(Boolean)
          .join(' ')
      : ''

export function fakeAnthropic(options: FakeAnthropicOptions = {}): FakeAnthropic {
  const apiKey = options.apiKey ?? 'sk-ant-fake'
  const bashCommand = options.bashCommand ?? 'echo chatgate-tool-ran'
  const marker = options.marker ?? ANTHROPIC_MARKER
  const name = options.name ?? 'a'
  const secret = `fake-anthropic-${name}-${crypto.randomUUID()}`
  const sign = (thinking: string) => `fakesig_${name}_` + createHmac('sha256', secret).update(thinking).digest('base64url')
  let counter = 0
  const answered: string[] = []
  /** The thinking block each tool_use id was issued with: it must come back with its call, unchanged. */
  const thinkingOf = new Map<string, Block>()
  /** Threads by the id of the answer that ends them: the whole conversation, and whether a turn continued it. */
  const threads = new Map<string, { system: unknown; tools: unknown; messages: Message[]; continued: boolean }>()

  /** Anthropic's own checks, on the whole conversation (a thread's included). */
  function problem(body: Record<string, any>, messages: Message[]): string | null {
    if (typeof body.model !== 'string' || body.model === '') return 'model: Field required'
    if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return 'max_tokens: Field required'
    if (messages.length === 0) return 'messages: at least one message is required'
    for (const [i, message] of messages.entries()) {
      if (!['user', 'assistant', 'system'].includes(message.role)) return `messages.${i}.role: Input should be 'user', 'assistant' or 'system'`
      if (typeof message.content !== 'string' && !Array.isArray(message.content)) return `messages.${i}.content: Input should be a valid list`
      for (const [j, block] of blocksOf(message.content).entries()) {
        if (block.type === 'thinking' && block.signature !== sign(block.thinking ?? '')) {
          return `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`
        }
        if (block.type === 'tool_result') {
          const previous = messages.slice(0, i).findLast((m) => m.role === 'assistant')
          const ids = previous ? blocksOf(previous.content).flatMap((b) => (b.type === 'tool_use' ? [b.id] : [])) : []
          if (!ids.includes(block.tool_use_id)) {
            return `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${block.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`
          }
        }
      }
      const uses = message.role === 'assistant' ? blocksOf(message.content).flatMap((b) => (b.type === 'tool_use' ? [b.id] : [])) : []
      // Thinking with tool use: the turn's thinking block goes back with the call, unmodified.
      for (const id of uses) {
        const issued = thinkingOf.get(id)
        const sent = blocksOf(message.content).find((b) => b.type === 'thinking')
        if (issued && (sent?.thinking !== issued.thinking || sent?.signature !== issued.signature)) {
          return `messages.${i}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${blocksOf(message.content)[0]?.type}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks).`
        }
      }
      const next = messages.slice(i + 1).find((m) => m.role !== 'system')
      if (uses.length > 0 && next) {
        const results = next.role === 'user' ? blocksOf(next.content).flatMap((b) => (b.type === 'tool_result' ? [b.tool_use_id] : [])) : []
        const missing = uses.filter((id) => !results.includes(id))
        if (missing.length > 0) {
          return `messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`
        }
      }
    }
    const thinking = body.thinking
    if (thinking?.type === 'enabled') {
      if (!Number.isInteger(thinking.budget_tokens) || thinking.budget_tokens < 1024)
        return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024'
      if (thinking.budget_tokens >= body.max_tokens) return '`max_tokens` must be greater than `thinking.budget_tokens`'
    } else if (thinking !== undefined && !['disabled', 'adaptive'].includes(thinking?.type)) {
      return `thinking.type: Input should be 'enabled', 'disabled' or 'adaptive'`
    }
    const format = body.output_config?.format
    if (format !== undefined && (format?.type !== 'json_schema' || typeof format.schema !== 'object'))
      return 'output_config.format: Input should be a valid json_schema format'
    for (const [i, tool] of (body.tools ?? []).entries()) {
      if (tool.type === undefined || tool.type === 'custom') {
        if (typeof tool.name !== 'string' || tool.input_schema?.type !== 'object') return `tools.${i}.custom.input_schema.type: Input should be 'object'`
      }
    }
    return null
  }

  function answer(body: Record<string, any>, messages: Message[]) {
    const id = `msg_fake_${name}_${++counter}`
    const content: Block[] = []
    const thinkingType = body.thinking?.type
    if (thinkingType === 'enabled' || thinkingType === 'adaptive') {
      const thinking = body.thinking.display === 'omitted' ? '' : `fake-anthropic-${name} thought ${counter} about it`
      content.push({ type: 'thinking', thinking, signature: sign(thinking) })
    }
    const tools: Block[] = (body.tools ?? []).filter((t: Block) => typeof t.name === 'string' && (t.type === undefined || t.type === 'custom'))
    const hasResult = messages.some((m) => blocksOf(m.content).some((b) => b.type === 'tool_result'))
    const format = body.output_config?.format
    if (tools.length > 0 && !hasResult) {
      const asked = /\[\[call:([A-Za-z0-9_-]+)\]\]/.exec(messages.map((m) => (m.role === 'user' ? textOf(m.content) : '')).join(' '))?.[1]
      const tool = tools.find((t) => t.name === asked) ?? tools.find((t) => t.name === 'Bash') ?? tools[0]!
      const input = tool.name === 'Bash' ? { command: bashCommand, description: 'Print a marker' } : (options.toolInput?.(tool.name) ?? {})
      const id = `toolu_fake_${name}_${counter}`
      content.push({ type: 'tool_use', id, name: tool.name, input })
      const thinking = content.find((b) => b.type === 'thinking')
      if (thinking) thinkingOf.set(id, thinking)
    } else if (format?.type === 'json_schema') {
      content.push({ type: 'text', text: JSON.stringify(sampleOf(format.schema)) })
    } else {
      const lastResult = messages
        .flatMap((m) => blocksOf(m.content))
        .filter((b) => b.type === 'tool_result')
        .at(-1)
      const lastUser = messages.findLast((m) => m.role === 'user' && blocksOf(m.content).some((b) => b.type === 'text'))
      const heard = textOf(lastUser?.content).slice(-200)
      const text = `${marker}` + (lastResult ? ` (the tool said: ${textOf(lastResult.content)})` : '') + ` heard: ${heard}`
      content.push({ type: 'text', text })
    }
    const stopReason = content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn'
    const output = roughTokens(JSON.stringify(content))
    const usage = { input_tokens: roughTokens(JSON.stringify(messages)), output_tokens: output, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 }
    answered.push(id)
    return { id, type: 'message', role: 'assistant', model: body.model, content, stop_reason: stopReason, stop_sequence: null, usage }
  }

  function stream(message: ReturnType<typeof answer>): Response {
    const events: { event: string; data: unknown }[] = []
    const push = (type: string, data: Record<string, unknown> = {}) => events.push({ event: type, data: { type, ...data } })
    push('message_start', { message: { ...message, content: [], stop_reason: null, usage: { ...message.usage, output_tokens: 1 } } })
    push('ping')
    message.content.forEach((block, index) => {
      if (block.type === 'thinking') {
        push('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } })
        for (const piece of block.thinking === '' ? [] : pieces(block.thinking))
          push('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: piece } })
        push('content_block_delta', { index, delta: { type: 'signature_delta', signature: block.signature } })
      } else if (block.type === 'tool_use') {
        push('content_block_start', { index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } })
        for (const piece of pieces(JSON.stringify(block.input)))
          push('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } })
      } else {
        push('content_block_start', { index, content_block: { type: 'text', text: '' } })
        for (const piece of pieces(block.text)) push('content_block_delta', { index, delta: { type: 'text_delta', text: piece } })
      }
      push('content_block_stop', { index })
    })
    push('message_delta', { delta: { stop_reason: message.stop_reason, stop_sequence: null }, usage: { output_tokens: message.usage.output_tokens } })
    push('message_stop')
    return sseResponse(events, { 'request-id': `req_${message.id}` })
  }

  function messagesCall(call: RecordedCall): Response {
    const body = call.body as Record<string, any> | null
    if (body === null || typeof body !== 'object') return invalid('The request body is not valid JSON.')
    if (!Array.isArray(body.messages)) return invalid('messages: Field required')
    let history: Message[] = body.messages
    // What the turn runs with: on a `continue`, the thread's system and tools (the recorded body stays as sent).
    let effective = body
    const thread = body.thread
    if (thread !== undefined && thread !== null) {
      const betas = (call.headers.get('anthropic-beta') ?? '').split(',').map((b) => b.trim())
      if (!betas.includes(THREADS_BETA)) return invalid(`thread: requires the anthropic-beta header ${THREADS_BETA}`)
      if (thread.type === 'continue') {
        const held = threads.get(thread.previous_message_id)
        if (!held) {
          return error(404, 'not_found_error', `No thread state for previous_message_id ${thread.previous_message_id}`, { error_code: 'thread_not_found' })
        }
        if (held.continued) return invalid(`The thread was already continued from ${thread.previous_message_id}`, { error_code: 'thread_already_continued' })
        if (body.system !== undefined || body.tools !== undefined) {
          return invalid('`system` and `tools` are taken from the thread on a `continue`: do not send them')
        }
        held.continued = true
        history = [...held.messages, ...body.messages]
        effective = { ...body, system: held.system, tools: held.tools }
      } else if (thread.type !== 'create') {
        return invalid(`thread.type: Input should be 'create' or 'continue'`)
      }
    }
    const why = problem(effective, history)
    if (why !== null) return invalid(why)
    const message = answer(effective, history)
    if (thread?.type === 'create' || thread?.type === 'continue') {
      threads.set(message.id, {
        system: effective.system,
        tools: effective.tools,
        messages: [...history, { role: 'assistant', content: message.content }],
        continued: false,
      })
    }
    if (body.stream === true) return stream(message)
    return Response.json(message, { headers: { 'request-id': `req_${message.id}` } })
  }

  const server = recordingServer((call) => {
    if (call.headers.get('x-api-key') !== apiKey) return error(401, 'authentication_error', 'invalid x-api-key')
    if (!call.headers.get('anthropic-version')) return invalid('anthropic-version: header is required')
    const refusal = options.refuse?.(call)
    if (refusal) return refusal
    if (call.method === 'POST' && call.path === '/v1/messages') return messagesCall(call)
    if (call.method === 'POST' && call.path === '/v1/messages/count_tokens') {
      return Response.json({ input_tokens: roughTokens(JSON.stringify(call.body?.messages ?? [])) })
    }
    if (call.method === 'GET' && call.path === '/v1/models') {
      const data = ['claude-sonnet-4-5', 'claude-haiku-4-5'].map((id) => ({ type: 'model', id, display_name: id, created_at: '2025-09-29T00:00:00Z' }))
      return Response.json({ data, has_more: false, first_id: data[0]!.id, last_id: data.at(-1)!.id })
    }
    return error(404, 'not_found_error', `Not found: ${call.method} ${call.path}`)
  })

  return {
    url: `${server.origin}/v1`,
    calls: server.calls,
    messageCalls: () => server.calls.filter((c) => c.method === 'POST' && c.path === '/v1/messages'),
    answered,
    stop: server.stop,
  }
}
