/**
 * Google's generateContent wire types (the Gemini API, https://ai.google.dev/api/generate-content,
 * and Vertex AI, https://cloud.google.com/vertex-ai/docs/reference/rest): the fields the gateway
 * reads, writes or translates. Open like the pivot's: what the gateway does not know passes through.
 */

export interface Blob {
  mimeType: string
  /** Base64. */
  data: string
}

export interface FileData {
  mimeType?: string
  fileUri: string
}

export interface FunctionCall {
  name: string
  args?: Record<string, unknown>
  /** Set by some models (Vertex AI); echoed on the matching functionResponse. */
  id?: string
}

export interface FunctionResponse {
  name: string
  response: Record<string, unknown>
  id?: string
}

/** One part of a content: exactly one of its data fields, plus the thought flags. */
export interface Part {
  text?: string
  inlineData?: Blob
  fileData?: FileData
  functionCall?: FunctionCall
  functionResponse?: FunctionResponse
  /** The part is a thought summary (with `includeThoughts`). */
  thought?: boolean
  /** Opaque, base64: sent back on the same part on the next turn (https://ai.google.dev/gemini-api/docs/thought-signatures). */
  thoughtSignature?: string
  [field: string]: unknown
}

export interface Content {
  /** `user` or `model`; function responses go in a `user` content. */
  role?: 'user' | 'model'
  parts: Part[]
}

export interface FunctionDeclaration {
  name: string
  description?: string
  /** A JSON Schema as is (not Google's OpenAPI subset, `parameters`). */
  parametersJsonSchema?: Record<string, unknown>
}

export interface Tool {
  functionDeclarations?: FunctionDeclaration[]
  [field: string]: unknown
}

export type FunctionCallingMode = 'AUTO' | 'ANY' | 'NONE' | 'VALIDATED'

export interface ToolConfig {
  functionCallingConfig?: { mode?: FunctionCallingMode; allowedFunctionNames?: string[] }
}

export interface ThinkingConfig {
  thinkingBudget?: number
  includeThoughts?: boolean
  thinkingLevel?: string
}

export interface GenerationConfig {
  maxOutputTokens?: number
  temperature?: number
  topP?: number
  topK?: number
  stopSequences?: string[]
  candidateCount?: number
  seed?: number
  presencePenalty?: number
  frequencyPenalty?: number
  responseMimeType?: string
  /** A JSON Schema as is (not Google's OpenAPI subset, `responseSchema`). */
  responseJsonSchema?: Record<string, unknown>
  thinkingConfig?: ThinkingConfig
  [field: string]: unknown
}

export interface GenerateContentRequest {
  contents: Content[]
  systemInstruction?: Content
  tools?: Tool[]
  toolConfig?: ToolConfig
  generationConfig?: GenerationConfig
  safetySettings?: unknown[]
  [field: string]: unknown
}

export interface UsageMetadata {
  /** The whole prompt, cached content included. */
  promptTokenCount?: number
  /** The answer, thoughts excluded. */
  candidatesTokenCount?: number
  thoughtsTokenCount?: number
  /** The part of the prompt read from the cache. */
  cachedContentTokenCount?: number
  toolUsePromptTokenCount?: number
  totalTokenCount?: number
  [field: string]: unknown
}

export interface Candidate {
  content?: Content
  finishReason?: string
  index?: number
  safetyRatings?: unknown[]
  [field: string]: unknown
}

export interface PromptFeedback {
  blockReason?: string
  safetyRatings?: unknown[]
}

/** A whole answer, or one chunk of `:streamGenerateContent?alt=sse` (each a partial answer of the same shape). */
export interface GenerateContentResponse {
  candidates?: Candidate[]
  promptFeedback?: PromptFeedback
  usageMetadata?: UsageMetadata
  modelVersion?: string
  responseId?: string
  [field: string]: unknown
}

/** Google's error body (https://cloud.google.com/apis/design/errors). */
export interface ErrorBody {
  error: {
    code: number
    message: string
    /** The canonical code's name: INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNAVAILABLE... */
    status: string
    details?: ({ '@type'?: string; [field: string]: unknown } | null)[]
  }
}

/** `:countTokens` on the Gemini API wraps the whole request; Vertex AI takes its members directly. */
export interface CountTokensRequest {
  generateContentRequest?: GenerateContentRequest & { model: string }
  contents?: Content[]
  systemInstruction?: Content
  tools?: Tool[]
}

export interface CountTokensResponse {
  totalTokens: number
  cachedContentTokenCount?: number
  [field: string]: unknown
}

/** `:batchEmbedContents` (https://ai.google.dev/api/embeddings). */
export interface BatchEmbedContentsRequest {
  requests: { model: string; content: Content; taskType?: string; outputDimensionality?: number }[]
}

export interface BatchEmbedContentsResponse {
  embeddings: { values: number[] }[]
  usageMetadata?: { promptTokenCount?: number; totalTokenCount?: number }
}

/** Vertex AI's `:predict` for its embedding models (text-embedding-005, gemini-embedding-001...). */
export interface PredictEmbeddingsRequest {
  instances: { content: string; task_type?: string }[]
  parameters?: { outputDimensionality?: number; autoTruncate?: boolean }
}

export interface PredictEmbeddingsResponse {
  predictions: { embeddings: { values: number[]; statistics?: { token_count?: number; truncated?: boolean } } }[]
  metadata?: { billableCharacterCount?: number }
}
