/**
 * OpenAI chat completion wire types: the fields the gateway reads, writes or translates. Every type
 * is open (`[field: string]: unknown`): what the gateway does not know passes through untouched.
 */

export interface TextPart {
  type: 'text'
  text: string
}

export interface ImageUrlPart {
  type: 'image_url'
  image_url: { url: string; detail?: 'auto' | 'low' | 'high' }
}

export interface InputAudioPart {
  type: 'input_audio'
  input_audio: { data: string; format: string }
}

export interface FilePart {
  type: 'file'
  file: { file_data?: string; file_id?: string; filename?: string }
}

export interface RefusalPart {
  type: 'refusal'
  refusal: string
}

/** A content part of a known type, or one the gateway relays without knowing it. */
export type ContentPart = TextPart | ImageUrlPart | InputAudioPart | FilePart | RefusalPart | { type: string; [field: string]: unknown }

export interface ToolCall {
  id: string
  type: 'function'
  function: { name: string; arguments: string }
}

/** A reasoning block as Anthropic signs it, carried on OpenAI messages under LiteLLM's names. */
export type ThinkingBlock = { type: 'thinking'; thinking: string; signature: string } | { type: 'redacted_thinking'; data: string }

export type Role = 'system' | 'developer' | 'user' | 'assistant' | 'tool' | 'function'

export interface ChatMessage {
  role: Role
  content?: string | ContentPart[] | null
  name?: string
  /** Assistant messages. */
  tool_calls?: ToolCall[]
  /** Legacy function calling: assistant messages. */
  function_call?: { name: string; arguments: string } | null
  refusal?: string | null
  reasoning_content?: string | null
  thinking_blocks?: ThinkingBlock[]
  /** Tool messages. */
  tool_call_id?: string
  [field: string]: unknown
}

export interface FunctionTool {
  type: 'function'
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null }
}

export type ToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } } | { type: string; [field: string]: unknown }

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean | null } }

export interface ChatRequest {
  model: string
  messages: ChatMessage[]
  temperature?: number | null
  top_p?: number | null
  max_tokens?: number | null
  max_completion_tokens?: number | null
  stream?: boolean | null
  stream_options?: { include_usage?: boolean; [field: string]: unknown } | null
  stop?: string | string[] | null
  user?: string
  tools?: FunctionTool[] | { type: string; [field: string]: unknown }[]
  tool_choice?: ToolChoice
  parallel_tool_calls?: boolean | null
  response_format?: ResponseFormat
  reasoning_effort?: string | null
  /** Legacy function calling. */
  functions?: { name: string; description?: string; parameters?: Record<string, unknown> }[]
  function_call?: 'none' | 'auto' | { name: string }
  [field: string]: unknown
}

export interface Usage {
  prompt_tokens: number
  completion_tokens: number
  total_tokens: number
  prompt_tokens_details?: { cached_tokens?: number; [field: string]: unknown } | null
  completion_tokens_details?: { reasoning_tokens?: number; [field: string]: unknown } | null
  [field: string]: unknown
}

export interface AssistantMessage {
  role: 'assistant'
  content: string | null
  refusal: string | null
  tool_calls?: ToolCall[]
  reasoning_content?: string
  thinking_blocks?: ThinkingBlock[]
  [field: string]: unknown
}

export interface ChatCompletion {
  id: string
  object: 'chat.completion'
  created: number
  model: string
  choices: {
    index: number
    message: AssistantMessage
    logprobs: unknown
    finish_reason: string | null
    [field: string]: unknown
  }[]
  usage: Usage
  [field: string]: unknown
}

/** A fragment of a tool call in a stream: the first carries id, type and name; later ones argument text. */
export interface ToolCallDelta {
  index: number
  id?: string
  type?: 'function'
  function?: { name?: string; arguments?: string }
}

export interface ChunkDelta {
  role?: 'assistant'
  content?: string | null
  refusal?: string | null
  tool_calls?: ToolCallDelta[]
  reasoning_content?: string
  thinking_blocks?: ThinkingBlock[]
  [field: string]: unknown
}

export interface ChatCompletionChunk {
  id: string
  object: 'chat.completion.chunk'
  created: number
  model: string
  choices: {
    index: number
    delta: ChunkDelta
    logprobs?: unknown
    finish_reason: string | null
    [field: string]: unknown
  }[]
  usage?: Usage | null
  [field: string]: unknown
}

/** A chunk exactly as an OpenAI-compatible upstream serialized it: relayed without re-encoding. */
export interface RawChunk {
  data: string
}

/** What a provider's stream yields, in batches (one per network read). */
export type StreamChunk = ChatCompletionChunk | RawChunk

/** The text of a message: a string as is, its text parts joined by newlines, anything else empty. */
export function messageText(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  let text = ''
  for (const part of content) {
    if (part.type !== 'text' || typeof part.text !== 'string') continue
    text = text === '' ? part.text : `${text}\n${part.text}`
  }
  return text
}
