/**
 * AWS Bedrock's Converse API, as its JSON travels over HTTP: the fields the gateway writes or reads.
 * From the published API reference (docs.aws.amazon.com/bedrock/latest/APIReference/):
 * API_runtime_Converse, API_runtime_ConverseStream, and the data types they name (Message,
 * ContentBlock, ToolConfiguration, ReasoningContentBlock, TokenUsage, ...). Blobs (image and
 * document bytes, redacted reasoning) are base64 strings in JSON.
 */

export type ImageFormat = 'png' | 'jpeg' | 'gif' | 'webp'
export type DocumentFormat = 'pdf' | 'csv' | 'doc' | 'docx' | 'xls' | 'xlsx' | 'html' | 'txt' | 'md'

export interface ImageBlock {
  format: ImageFormat
  source: { bytes: string }
}

export interface DocumentBlock {
  format: DocumentFormat
  /** Alphanumerics, single spaces, hyphens, parentheses and square brackets. */
  name: string
  source: { bytes: string }
}

export interface ToolUseBlock {
  toolUseId: string
  name: string
  input: unknown
}

export type ToolResultContent = { text: string } | { json: unknown } | { image: ImageBlock } | { document: DocumentBlock }

export interface ToolResultBlock {
  toolUseId: string
  content: ToolResultContent[]
  status?: 'success' | 'error'
}

/** Reasoning: its text with the signature that lets it come back on the next turn, or redacted (encrypted) bytes. */
export interface ReasoningContentBlock {
  reasoningText?: { text: string; signature?: string }
  redactedContent?: string
}

export interface CachePointBlock {
  type: 'default'
}

/** A content block is a union: exactly one of these members. */
export interface ContentBlock {
  text?: string
  image?: ImageBlock
  document?: DocumentBlock
  toolUse?: ToolUseBlock
  toolResult?: ToolResultBlock
  reasoningContent?: ReasoningContentBlock
  cachePoint?: CachePointBlock
  [member: string]: unknown
}

export interface Message {
  role: 'user' | 'assistant'
  content: ContentBlock[]
}

export type SystemBlock = { text: string } | { cachePoint: CachePointBlock }

export interface ToolSpec {
  name: string
  description?: string
  inputSchema: { json: Record<string, unknown> }
}

export type ToolChoice = { auto: Record<string, never> } | { any: Record<string, never> } | { tool: { name: string } }

export interface ToolConfig {
  tools: ({ toolSpec: ToolSpec } | { cachePoint: CachePointBlock })[]
  toolChoice?: ToolChoice
}

export interface InferenceConfig {
  maxTokens?: number
  temperature?: number
  topP?: number
  stopSequences?: string[]
}

/** Structured output (API_runtime_OutputConfig): the schema travels as JSON text. */
export interface OutputConfig {
  textFormat: { type: 'json_schema'; structure: { jsonSchema: { schema: string; name?: string; description?: string } } }
}

/** The body of POST /model/{modelId}/converse and /converse-stream (the model is in the path). */
export interface ConverseRequest {
  messages: Message[]
  system?: SystemBlock[]
  inferenceConfig?: InferenceConfig
  toolConfig?: ToolConfig
  outputConfig?: OutputConfig
  /** Fields the model takes beyond the common ones: Claude's `thinking`, for one. */
  additionalModelRequestFields?: Record<string, unknown>
}

export type StopReason =
  | 'end_turn'
  | 'tool_use'
  | 'max_tokens'
  | 'stop_sequence'
  | 'guardrail_intervened'
  | 'content_filtered'
  | 'malformed_model_output'
  | 'malformed_tool_use'
  | 'model_context_window_exceeded'
  | (string & {})

/** Input tokens exclude the cache's reads and writes, as Anthropic counts them. */
export interface TokenUsage {
  inputTokens: number
  outputTokens: number
  totalTokens?: number
  cacheReadInputTokens?: number
  cacheWriteInputTokens?: number
}

export interface ConverseResponse {
  output: { message: Message }
  stopReason: StopReason
  usage: TokenUsage
  metrics?: { latencyMs: number }
  [field: string]: unknown
}

/** The body of POST /model/{modelId}/count-tokens (API_runtime_CountTokens). */
export interface CountTokensRequest {
  input: { converse: Pick<ConverseRequest, 'messages' | 'system' | 'toolConfig' | 'additionalModelRequestFields'> }
}

// ---------------------------------------------------------------- ConverseStream events

export interface MessageStartEvent {
  role: 'assistant'
}

export interface ContentBlockStartEvent {
  contentBlockIndex: number
  start: { toolUse?: { toolUseId: string; name: string } }
}

export interface ContentBlockDeltaEvent {
  contentBlockIndex: number
  delta: {
    text?: string
    /** A fragment of the tool's input, as JSON text. */
    toolUse?: { input: string }
    reasoningContent?: { text?: string; signature?: string; redactedContent?: string }
  }
}

export interface ContentBlockStopEvent {
  contentBlockIndex: number
}

export interface MessageStopEvent {
  stopReason: StopReason
  additionalModelResponseFields?: unknown
}

export interface MetadataEvent {
  usage: TokenUsage
  metrics?: { latencyMs: number }
}

/** One ConverseStream event: its `:event-type` header and its JSON payload. */
export type StreamEvent =
  | { type: 'messageStart'; body: MessageStartEvent }
  | { type: 'contentBlockStart'; body: ContentBlockStartEvent }
  | { type: 'contentBlockDelta'; body: ContentBlockDeltaEvent }
  | { type: 'contentBlockStop'; body: ContentBlockStopEvent }
  | { type: 'messageStop'; body: MessageStopEvent }
  | { type: 'metadata'; body: MetadataEvent }
