/**
 * OpenAI Responses API wire types: the fields the gateway reads, writes or translates. Sources: the
 * openai SDK's `resources/responses/responses.d.ts` (v7.57.0) and OpenAI's published OpenAPI
 * document (`components.schemas`: CreateResponse, InputItem, OutputItem, Response, ResponseUsage,
 * Response*Event). Requests are open (`[field: string]: unknown`), as callers send fields the
 * gateway does not know; what the gateway writes is exact.
 */

// ------------------------------------------------------------------ content parts

export interface InputText {
  type: 'input_text'
  text: string
  [field: string]: unknown
}

export interface InputImage {
  type: 'input_image'
  image_url?: string | null
  file_id?: string | null
  detail?: 'low' | 'high' | 'auto' | 'original'
  [field: string]: unknown
}

export interface InputFile {
  type: 'input_file'
  /** A data URL (`data:application/pdf;base64,...`). */
  file_data?: string
  file_id?: string | null
  file_url?: string
  filename?: string
  [field: string]: unknown
}

export interface InputAudio {
  type: 'input_audio'
  input_audio: { data: string; format: string }
}

/** An assistant's text, as written in a Response and sent back as input. */
export interface OutputText {
  type: 'output_text'
  text: string
  annotations: unknown[]
  /** Always present on what the gateway writes (the document requires it), empty: no log probabilities. */
  logprobs: unknown[]
}

export interface Refusal {
  type: 'refusal'
  refusal: string
}

export interface SummaryText {
  type: 'summary_text'
  text: string
}

export interface ReasoningText {
  type: 'reasoning_text'
  text: string
}

/** A part of an input message (output_text without its annotations and logprobs, as clients send it back). */
export type InputContent = InputText | InputImage | InputFile | InputAudio | (Omit<OutputText, 'annotations' | 'logprobs'> & Partial<OutputText>) | Refusal

// ------------------------------------------------------------------ input items

export interface MessageItem {
  /** Optional: OpenAI's "easy" input message leaves it out. */
  type?: 'message'
  id?: string
  role: 'user' | 'assistant' | 'system' | 'developer'
  content: string | InputContent[]
  status?: string
  /** Codex's `commentary` / `final_answer` marking of assistant messages. */
  phase?: string | null
}

export interface FunctionCallItem {
  type: 'function_call'
  id?: string
  call_id: string
  name: string
  /** The namespace tool the function belongs to. */
  namespace?: string
  arguments: string
  status?: string
}

export interface FunctionCallOutputItem {
  type: 'function_call_output'
  id?: string | null
  call_id: string
  output: string | InputContent[]
  status?: string | null
}

/** A call of a freeform (`custom`) tool: its input is one string. */
export interface CustomToolCallItem {
  type: 'custom_tool_call'
  id?: string
  call_id: string
  name: string
  namespace?: string
  input: string
}

export interface CustomToolCallOutputItem {
  type: 'custom_tool_call_output'
  id?: string
  call_id: string
  output: string | InputContent[]
}

export interface ReasoningItem {
  type: 'reasoning'
  id: string
  summary: SummaryText[]
  content?: ReasoningText[]
  encrypted_content?: string | null
  status?: string
}

/** Tools made available from this point of the conversation on (Codex's "responses lite" requests). */
export interface AdditionalToolsItem {
  type: 'additional_tools'
  id?: string | null
  role: 'developer'
  tools: Tool[]
}

/** An item of another type (hosted tools' calls, item references, compaction...): see cannot-serve.ts. */
export interface OtherItem {
  type: string
  [field: string]: unknown
}

export type InputItem =
  MessageItem | FunctionCallItem | FunctionCallOutputItem | CustomToolCallItem | CustomToolCallOutputItem | ReasoningItem | AdditionalToolsItem

// ------------------------------------------------------------------ tools

export interface FunctionTool {
  type: 'function'
  name: string
  description?: string | null
  parameters?: Record<string, unknown> | null
  strict?: boolean | null
  [field: string]: unknown
}

export interface CustomTool {
  type: 'custom'
  name: string
  description?: string
  format?: { type: 'text' } | { type: 'grammar'; syntax: string; definition: string }
  [field: string]: unknown
}

export interface NamespaceTool {
  type: 'namespace'
  name: string
  description: string
  tools: (FunctionTool | CustomTool)[]
}

/** A tool the provider runs itself (web_search, file_search, code_interpreter, mcp...) or a model-native one (local_shell, computer...). */
export interface HostedToolSpec {
  type: string
  [field: string]: unknown
}

export type Tool = FunctionTool | CustomTool | NamespaceTool | HostedToolSpec

export type ToolChoice =
  | 'none'
  | 'auto'
  | 'required'
  | { type: 'function'; name: string }
  | { type: 'custom'; name: string }
  | { type: 'allowed_tools'; mode: 'auto' | 'required'; tools: { type: string; name?: string; [field: string]: unknown }[] }
  | { type: string; [field: string]: unknown }

export type TextFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; schema: Record<string, unknown>; description?: string; strict?: boolean | null }

export interface ReasoningConfig {
  effort?: string | null
  summary?: 'auto' | 'concise' | 'detailed' | null
  /** The deprecated name of `summary`. */
  generate_summary?: 'auto' | 'concise' | 'detailed' | null
  context?: string | null
  [field: string]: unknown
}

// ------------------------------------------------------------------ the request

export interface ResponsesRequest {
  model: string
  input?: string | InputItem[]
  instructions?: string | null
  tools?: Tool[]
  tool_choice?: ToolChoice
  parallel_tool_calls?: boolean | null
  text?: { format?: TextFormat; verbosity?: string | null; [field: string]: unknown }
  reasoning?: ReasoningConfig | null
  max_output_tokens?: number | null
  temperature?: number | null
  top_p?: number | null
  user?: string
  safety_identifier?: string | null
  prompt_cache_key?: string | null
  prompt_cache_retention?: string | null
  service_tier?: string | null
  metadata?: Record<string, string> | null
  store?: boolean | null
  previous_response_id?: string | null
  include?: string[] | null
  stream?: boolean | null
  stream_options?: Record<string, unknown> | null
  truncation?: 'auto' | 'disabled' | null
  background?: boolean | null
  conversation?: unknown
  [field: string]: unknown
}

// ------------------------------------------------------------------ the response

export interface OutputMessage {
  type: 'message'
  id: string
  status: 'in_progress' | 'completed' | 'incomplete'
  role: 'assistant'
  content: (OutputText | Refusal)[]
}

export interface OutputFunctionCall {
  type: 'function_call'
  id: string
  call_id: string
  name: string
  namespace?: string
  arguments: string
  status: 'in_progress' | 'completed' | 'incomplete'
}

export interface OutputCustomToolCall {
  type: 'custom_tool_call'
  id: string
  call_id: string
  name: string
  namespace?: string
  input: string
}

export interface OutputReasoning {
  type: 'reasoning'
  id: string
  summary: SummaryText[]
  /** The sealed reasoning (pivot/sealed-reasoning.ts), when `include` asks for `reasoning.encrypted_content`. */
  encrypted_content?: string
}

export type OutputItem = OutputMessage | OutputFunctionCall | OutputCustomToolCall | OutputReasoning

export interface ResponseUsage {
  input_tokens: number
  input_tokens_details: { cached_tokens: number; cache_write_tokens: number }
  output_tokens: number
  output_tokens_details: { reasoning_tokens: number }
  total_tokens: number
}

export type ResponseStatus = 'completed' | 'failed' | 'in_progress' | 'incomplete'

/** A Response object: every field the document marks required is present (null where it does not apply). */
export interface Response {
  id: string
  object: 'response'
  created_at: number
  status: ResponseStatus
  completed_at: number | null
  /** `code` is one of the document's ResponseErrorCode values. */
  error: { code: string; message: string } | null
  incomplete_details: { reason: 'max_output_tokens' | 'content_filter' } | null
  instructions: string | null
  model: string
  output: OutputItem[]
  parallel_tool_calls: boolean
  metadata: Record<string, string>
  tool_choice: ToolChoice
  tools: Tool[]
  temperature: number | null
  top_p: number | null
  max_output_tokens: number | null
  previous_response_id: string | null
  reasoning: { effort: string | null; summary: string | null } | null
  text: { format: TextFormat; verbosity?: string }
  truncation: 'auto' | 'disabled'
  store: boolean
  background: boolean
  /** Absent until the answer is complete (the document's ResponseUsage is not nullable). */
  usage?: ResponseUsage
  user?: string
  service_tier?: string
  prompt_cache_key?: string
  safety_identifier?: string
}

// ------------------------------------------------------------------ stream events

interface ItemRef {
  item_id: string
  output_index: number
}

/** The stream events the gateway writes, each with its `sequence_number` (from 0). */
export type StreamEvent = { sequence_number: number } & (
  | { type: 'response.created' | 'response.in_progress' | 'response.completed' | 'response.incomplete' | 'response.failed'; response: Response }
  | { type: 'response.output_item.added' | 'response.output_item.done'; output_index: number; item: OutputItem }
  | ({ type: 'response.content_part.added' | 'response.content_part.done'; content_index: number; part: OutputText | Refusal } & ItemRef)
  | ({ type: 'response.output_text.delta'; content_index: number; delta: string; logprobs: unknown[] } & ItemRef)
  | ({ type: 'response.output_text.done'; content_index: number; text: string; logprobs: unknown[] } & ItemRef)
  | ({ type: 'response.refusal.delta'; content_index: number; delta: string } & ItemRef)
  | ({ type: 'response.refusal.done'; content_index: number; refusal: string } & ItemRef)
  | ({ type: 'response.function_call_arguments.delta'; delta: string } & ItemRef)
  | ({ type: 'response.function_call_arguments.done'; name: string; arguments: string } & ItemRef)
  | ({ type: 'response.custom_tool_call_input.delta'; delta: string } & ItemRef)
  | ({ type: 'response.custom_tool_call_input.done'; input: string } & ItemRef)
  | ({ type: 'response.reasoning_summary_part.added' | 'response.reasoning_summary_part.done'; summary_index: number; part: SummaryText } & ItemRef)
  | ({ type: 'response.reasoning_summary_text.delta'; summary_index: number; delta: string } & ItemRef)
  | ({ type: 'response.reasoning_summary_text.done'; summary_index: number; text: string } & ItemRef)
)

/** An event before it is numbered. */
export type UnnumberedEvent = StreamEvent extends infer E ? (E extends { sequence_number: number } ? Omit<E, 'sequence_number'> : never) : never
