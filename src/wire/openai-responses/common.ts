/** What the Response (answer-from-chat.ts) and its stream (events-from-chunks.ts) are both made of. */
import type { SealedReasoning } from '../pivot/sealed-reasoning'
import type * as OpenAI from '../pivot/types'
import { callerTool, pivotTools, type ToolNames, toolSources } from './tools'
import type { FunctionTool, OutputCustomToolCall, OutputFunctionCall, Response, ResponseStatus, ResponsesRequest, ResponseUsage, Tool } from './types'
import { inputItems } from './input-to-messages'

/** How a translated answer is named, dated and its reasoning sealed. */
export interface AnswerOptions {
  /** The Response's id, `resp_…`; its items' ids are made from it (`msg_…`, `rs_…`, `fc_…`, `ctc_…`). */
  id: string
  /** Unix seconds. */
  createdAt: number
  /** Unix seconds; default `createdAt`. */
  completedAt?: number
  /** Seals a turn's reasoning into `encrypted_content` (pivot/sealed-reasoning.ts). */
  seal(reasoning: SealedReasoning): string
  /** Which kind of upstream answered (`anthropic`, `openai`...), recorded in the sealed reasoning. */
  origin: string
  /** Whether the caller gets `encrypted_content` (`include` has `reasoning.encrypted_content`); the kept history always has it. */
  includeEncrypted: boolean
  /** The caller's tool names behind the pivot's (toChatRequest's `names`); default: from the request's own tools. */
  names?: ToolNames
}

/** Whether the caller asked for reasoning summaries: the pivot's reasoning text is then the reasoning item's summary. */
export const summaryWanted = (request: ResponsesRequest): boolean => (request.reasoning?.summary ?? request.reasoning?.generate_summary ?? null) !== null

export const namesFor = (request: ResponsesRequest, options: AnswerOptions): ToolNames =>
  options.names ?? pivotTools(toolSources(request.tools, [], inputItems(request.input))).names

/** Item ids made from the Response's: `resp_abc` → `msg_abc`, `rs_abc`, `fc_abc_0` (a second message or reasoning item: `msg_abc_1`). */
export function itemIds(responseId: string): ItemIds {
  const base = responseId.startsWith('resp_') ? responseId.slice(5) : responseId
  return {
    message: (n: number) => (n === 0 ? `msg_${base}` : `msg_${base}_${n}`),
    reasoning: (n: number) => (n === 0 ? `rs_${base}` : `rs_${base}_${n}`),
    call: (n: number) => `fc_${base}_${n}`,
    custom: (n: number) => `ctc_${base}_${n}`,
    /** A call id for an upstream that gave none. */
    callId: (n: number) => `call_${base}_${n}`,
  }
}

/** The response an item id made by itemIds belongs to (`rs_abc_1` → `resp_abc`); null for any other id. */
export function responseIdOfItem(itemId: string): string | null {
  const match = /^(?:msg|rs|fc|ctc)_([A-Za-z0-9]+)(?:_\d+)?$/.exec(itemId)
  return match ? `resp_${match[1]}` : null
}

export interface ItemIds {
  message(n: number): string
  reasoning(n: number): string
  call(n: number): string
  custom(n: number): string
  callId(n: number): string
}

/** A finish reason that ends the answer early, as the Response's incomplete_details.reason. */
export function incompleteReason(finish: string | null | undefined): 'max_output_tokens' | 'content_filter' | null {
  if (finish === 'length') return 'max_output_tokens'
  if (finish === 'content_filter') return 'content_filter'
  return null
}

/** The pivot's usage as the Response's; every detail is present (0 when the upstream did not say). */
export function responseUsage(usage: OpenAI.Usage | null | undefined): ResponseUsage {
  const input = usage?.prompt_tokens ?? 0
  const output = usage?.completion_tokens ?? 0
  const details = usage?.prompt_tokens_details as { cached_tokens?: number; cache_write_tokens?: number } | null | undefined
  const written = details?.cache_write_tokens ?? (typeof usage?.cache_creation_input_tokens === 'number' ? usage.cache_creation_input_tokens : 0)
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: details?.cached_tokens ?? 0, cache_write_tokens: written },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: usage?.completion_tokens_details?.reasoning_tokens ?? 0 },
    total_tokens: usage?.total_tokens ?? input + output,
  }
}

/** The reasoning of an assistant turn, to be sealed; null when it has none. */
export function sealable(reasoning: Pick<OpenAI.AssistantMessage, 'thinking_blocks' | 'reasoning_content'>, origin: string): SealedReasoning | null {
  const blocks = reasoning.thinking_blocks ?? []
  const text = reasoning.reasoning_content ?? ''
  if (blocks.length === 0 && text === '') return null
  const out: SealedReasoning = { origin }
  if (blocks.length > 0) out.thinking_blocks = blocks
  if (text !== '') out.reasoning_content = text
  return out
}

/** A pivot tool call as the caller's item: a function_call, or a custom_tool_call for a freeform tool; namespaces restored. */
export function callItem(
  call: { id: string; name: string; arguments: string },
  names: ToolNames,
  ids: ItemIds,
  n: number,
): OutputFunctionCall | OutputCustomToolCall {
  const tool = callerTool(call.name, names)
  const namespace = tool.namespace ? { namespace: tool.namespace } : {}
  if (tool.kind === 'custom')
    return { type: 'custom_tool_call', id: ids.custom(n), call_id: call.id, name: tool.name, ...namespace, input: customInput(call.arguments) }
  return { type: 'function_call', id: ids.call(n), call_id: call.id, name: tool.name, ...namespace, arguments: call.arguments, status: 'completed' }
}

/** A freeform tool's input from the function arguments `{"input": "..."}`; arguments of another shape are given whole, not lost. */
export function customInput(args: string): string {
  try {
    const parsed = JSON.parse(args) as unknown
    if (typeof parsed === 'object' && parsed !== null && typeof (parsed as { input?: unknown }).input === 'string') return (parsed as { input: string }).input
  } catch {}
  return args
}

/** The request's tools as the Response shows them: as sent, function tools with the two fields the document requires. */
const echoedTools = (tools: Tool[] | undefined): Tool[] =>
  (tools ?? []).map((tool) =>
    tool.type === 'function' ? { ...tool, parameters: (tool as FunctionTool).parameters ?? null, strict: (tool as FunctionTool).strict ?? null } : tool,
  )

/**
 * A Response with everything but its output and usage: the request's settings echoed, every field
 * the OpenAPI document requires present (null where it does not apply), `model` the caller's alias.
 */
export function responseShell(request: ResponsesRequest, options: AnswerOptions, status: ResponseStatus): Response {
  const reasoning = request.reasoning
  const response: Response = {
    id: options.id,
    object: 'response',
    created_at: options.createdAt,
    status,
    completed_at: status === 'completed' ? (options.completedAt ?? options.createdAt) : null,
    error: null,
    incomplete_details: null,
    instructions: typeof request.instructions === 'string' ? request.instructions : null,
    model: request.model,
    output: [],
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    metadata: request.metadata ?? {},
    tool_choice: request.tool_choice ?? 'auto',
    tools: echoedTools(request.tools),
    temperature: request.temperature ?? null,
    top_p: request.top_p ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    previous_response_id: request.previous_response_id ?? null,
    reasoning: reasoning ? { effort: reasoning.effort ?? null, summary: reasoning.summary ?? reasoning.generate_summary ?? null } : null,
    text: { format: request.text?.format ?? { type: 'text' }, ...(typeof request.text?.verbosity === 'string' ? { verbosity: request.text.verbosity } : {}) },
    truncation: request.truncation === 'auto' ? 'auto' : 'disabled',
    store: request.store !== false,
    background: false,
  }
  for (const field of ['user', 'service_tier', 'prompt_cache_key', 'safety_identifier'] as const) {
    const value = request[field]
    if (typeof value === 'string') response[field] = value
  }
  return response
}
