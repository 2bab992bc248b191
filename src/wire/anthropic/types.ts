/** Anthropic Messages API wire types: the fields the gateway reads, writes or translates. Open like OpenAI's. */

export interface CacheControl {
  type: 'ephemeral'
  [field: string]: unknown
}

export interface TextBlock {
  type: 'text'
  text: string
  cache_control?: CacheControl
  [field: string]: unknown
}

export type ImageSource = { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string }

export interface ImageBlock {
  type: 'image'
  source: ImageSource
  cache_control?: CacheControl
}

export type DocumentSource =
  { type: 'base64'; media_type: 'application/pdf'; data: string } | { type: 'url'; url: string } | { type: 'text'; media_type: 'text/plain'; data: string }

export interface DocumentBlock {
  type: 'document'
  source: DocumentSource
  title?: string
  cache_control?: CacheControl
  [field: string]: unknown
}

export interface ToolUseBlock {
  type: 'tool_use'
  id: string
  name: string
  input: Record<string, unknown>
  cache_control?: CacheControl
}

export interface ToolResultBlock {
  type: 'tool_result'
  tool_use_id: string
  content?: string | (TextBlock | ImageBlock | DocumentBlock | ToolReferenceBlock)[]
  is_error?: boolean
  cache_control?: CacheControl
}

/** A tool search's result: a tool the model may now call (Claude Code's ToolSearch). */
export interface ToolReferenceBlock {
  type: 'tool_reference'
  tool_name: string
  [field: string]: unknown
}

export interface ThinkingBlock {
  type: 'thinking'
  thinking: string
  signature: string
}

export interface RedactedThinkingBlock {
  type: 'redacted_thinking'
  data: string
}

export type ContentBlock = TextBlock | ImageBlock | DocumentBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock | RedactedThinkingBlock

export interface Message {
  /** `system`: a system message in the conversation (Claude Code sends its environment this way). */
  role: 'user' | 'assistant' | 'system'
  content: string | ContentBlock[]
}

export interface Tool {
  name: string
  description?: string
  input_schema: Record<string, unknown>
  cache_control?: CacheControl
  [field: string]: unknown
}

export type ToolChoice =
  | { type: 'auto'; disable_parallel_tool_use?: boolean }
  | { type: 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean }
  | { type: 'none' }

export interface MessagesRequest {
  model: string
  messages: Message[]
  max_tokens: number
  system?: string | TextBlock[]
  temperature?: number
  top_p?: number
  top_k?: number
  stop_sequences?: string[]
  metadata?: { user_id?: string }
  tools?: Tool[]
  tool_choice?: ToolChoice
  thinking?: { type: 'enabled'; budget_tokens: number } | { type: 'adaptive' } | { type: 'disabled' }
  stream?: boolean
  [field: string]: unknown
}

export interface Usage {
  input_tokens: number
  output_tokens: number
  cache_creation_input_tokens?: number | null
  cache_read_input_tokens?: number | null
  [field: string]: unknown
}

export interface MessageResponse {
  id: string
  type: 'message'
  role: 'assistant'
  model: string
  content: ContentBlock[]
  stop_reason: string | null
  stop_sequence: string | null
  usage: Usage
  [field: string]: unknown
}

/** One event of a Messages stream, as its `data:` line carries it. */
export type StreamEvent =
  | { type: 'message_start'; message: MessageResponse }
  | { type: 'content_block_start'; index: number; content_block: ContentBlock }
  | {
      type: 'content_block_delta'
      index: number
      delta:
        | { type: 'text_delta'; text: string }
        | { type: 'input_json_delta'; partial_json: string }
        | { type: 'thinking_delta'; thinking: string }
        | { type: 'signature_delta'; signature: string }
        | { type: string; [field: string]: unknown }
    }
  | { type: 'content_block_stop'; index: number }
  | { type: 'message_delta'; delta: { stop_reason: string | null; stop_sequence: string | null }; usage: Partial<Usage> }
  | { type: 'message_stop' }
  | { type: 'ping' }
  | { type: 'error'; error: { type: string; message: string } }
