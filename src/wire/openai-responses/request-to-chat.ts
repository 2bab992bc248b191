/** A Responses request as a pivot chat request: for every target that does not speak the Responses API itself. */
import type { SealedReasoning } from '../pivot/sealed-reasoning'
import type * as OpenAI from '../pivot/types'
import { droppedFromResponses } from './cannot-serve'
import { inputItems, toMessages } from './input-to-messages'
import { type HostedTool, pivotToolChoice, pivotTools, type ToolNames, toolSources } from './tools'
import type { InputItem, ResponsesRequest, TextFormat } from './types'

export interface ToChatOptions {
  /** The target's highest reasoning effort (`max_reasoning_effort`). */
  maxEffort: string
  /** A rebuilt conversation (previous_response_id): its earlier input and output items, sent before this request's input. */
  history?: readonly InputItem[]
  /**
   * Opens a reasoning item's `encrypted_content` (pivot/sealed-reasoning.ts); null leaves it out (named
   * `reasoning.encrypted_content` in `dropped`). The exchange may also refuse reasoning of another
   * origin here (signed thinking that only an Anthropic target can read).
   */
  unseal(token: string): SealedReasoning | null
}

export interface ToChat {
  chat: OpenAI.ChatRequest
  /** What the translation left out, for x-svc-dropped: hints and the items of hosted tools' earlier runs. */
  dropped: string[]
  /** The request's hosted tools, not in `chat`: the exchange drops them (naming `type`), refuses them, or maps them for the target. */
  hosted: HostedTool[]
  /** The caller's tool names behind the pivot's function names: give them to toResponse and EventsFromChunks. */
  names: ToolNames
}

/** `reasoning_effort` values from least to most effort; `max` is the Responses API's step above `xhigh`. */
const EFFORTS = ['low', 'medium', 'high', 'xhigh']

/** An effort no higher than `max`; values outside the scale (`none`, `minimal`) pass as they are. */
function cappedEffort(effort: string, max: string): string {
  const asked = effort === 'max' ? 'xhigh' : effort
  const at = EFFORTS.indexOf(asked)
  const cap = EFFORTS.indexOf(max)
  return at !== -1 && cap !== -1 && at > cap ? max : asked
}

/** `text.format` as the pivot's response_format; plain text is the default and needs none. */
function responseFormat(format: TextFormat | undefined): OpenAI.ResponseFormat | undefined {
  if (!format || format.type === 'text') return undefined
  if (format.type === 'json_object') return { type: 'json_object' }
  const schema: OpenAI.ResponseFormat & { type: 'json_schema' } = { type: 'json_schema', json_schema: { name: format.name, schema: format.schema } }
  if (typeof format.description === 'string') schema.json_schema.description = format.description
  if (typeof format.strict === 'boolean') schema.json_schema.strict = format.strict
  return schema
}

/** Tools, tool_choice and parallel_tool_calls; the last two only with tools (chat completions refuses them alone). */
function applyTools(request: ResponsesRequest, chat: OpenAI.ChatRequest, tools: ReturnType<typeof pivotTools>): void {
  const choice = request.tool_choice === undefined ? undefined : pivotToolChoice(request.tool_choice, tools.names)
  const only = choice?.only
  const declared = only ? tools.tools.filter((tool) => only.has(tool.function.name)) : tools.tools
  if (declared.length === 0) return
  chat.tools = declared
  if (choice) chat.tool_choice = choice.choice
  if (typeof request.parallel_tool_calls === 'boolean') chat.parallel_tool_calls = request.parallel_tool_calls
}

/** Sampling, limits and hints the pivot carries as they are. */
function applyFields(request: ResponsesRequest, chat: OpenAI.ChatRequest, maxEffort: string): void {
  if (typeof request.temperature === 'number') chat.temperature = request.temperature
  if (typeof request.top_p === 'number') chat.top_p = request.top_p
  if (typeof request.max_output_tokens === 'number') chat.max_completion_tokens = request.max_output_tokens
  if (typeof request.user === 'string') chat.user = request.user
  for (const field of ['safety_identifier', 'prompt_cache_key', 'prompt_cache_retention', 'service_tier'] as const) {
    const value = request[field]
    if (typeof value === 'string') chat[field] = value
  }
  const format = responseFormat(request.text?.format)
  if (format) chat.response_format = format
  if (typeof request.text?.verbosity === 'string') chat.verbosity = request.text.verbosity
  // reasoning.summary has no chat field: it shapes the answer (answer-from-chat.ts), not the request.
  const effort = request.reasoning?.effort
  if (typeof effort === 'string') chat.reasoning_effort = cappedEffort(effort, maxEffort)
  if (request.stream === true) chat.stream = true
}

/**
 * A Responses request as a chat request for `model`: `instructions` first as a system message, then
 * the rebuilt conversation and the input (input-to-messages.ts), the caller's tools as functions
 * (tools.ts), `text.format` as response_format, `reasoning.effort` as reasoning_effort (capped),
 * `max_output_tokens` as max_completion_tokens. Assumes chatCannotServe found nothing.
 */
export function toChatRequest(request: ResponsesRequest, model: string, options: ToChatOptions): ToChat {
  const history = options.history ?? []
  const input = inputItems(request.input)
  const { messages, dropped } = toMessages([...history, ...input], options.unseal)
  if (typeof request.instructions === 'string' && request.instructions !== '') messages.unshift({ role: 'system', content: request.instructions })
  const chat: OpenAI.ChatRequest = { model, messages }
  const tools = pivotTools(toolSources(request.tools, history, input))
  applyTools(request, chat, tools)
  applyFields(request, chat, options.maxEffort)
  return { chat, dropped: [...droppedFromResponses(request), ...dropped], hosted: tools.hosted, names: tools.names }
}
