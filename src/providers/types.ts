import type { UpstreamKindFacts, UpstreamSettings } from '../config/types'
import type { ChatCompletion, ChatRequest, StreamChunk } from '../wire/pivot/types'
import type { Unsupported } from '../errors'
import type { MessageResponse, StreamEvent } from '../wire/anthropic/types'
import type { JsonOutline } from '../wire/json-text'
import type { EmbeddingsRequest, EmbeddingsResponse } from '../wire/openai-embeddings/types'
import type { CountTokensResponse, GenerateContentResponse } from '../wire/gemini/types'

/** What a provider gets for one attempt. */
export interface AttemptContext {
  /** Aborted on the caller's disconnect or the attempt's timeouts, with the reason as a GatewayError. */
  signal: AbortSignal
  /** Call when the upstream's response headers arrive: it ends the connect timeout. */
  responded(): void
  /** With tracing on: the attempt span's W3C trace context headers (`traceparent`...), sent with the upstream request. */
  trace?: Readonly<Record<string, string>>
}

/** A completion as a provider received it. */
export interface Completed {
  completion: ChatCompletion
  /**
   * The upstream's JSON text when `completion` is exactly its parse, else null: relayed with only
   * the model swapped, so the body is not serialized a second time.
   */
  text: string | null
}

/** The caller's request body as sent, and where its top-level members sit in the text. */
export interface CallerJson {
  text: string
  outline: JsonOutline
}

/** One upstream, ready to serve. Requests arrive with `model` already set to the upstream's model. */
export interface Provider {
  /**
   * Why this upstream cannot serve the request without changing what the caller gets back (audio,
   * n > 1, a part type it does not know...), or null. Absent: it serves anything it is sent.
   */
  cannotServe?(request: ChatRequest): Unsupported | null
  /** The hints of a request this upstream cannot use and does not get (named in x-svc-dropped); absent: none. */
  dropped?(request: ChatRequest): readonly string[]
  /**
   * `caller` lets an upstream that takes OpenAI's format relay the caller's own JSON text with only
   * the model swapped, rather than serializing `request` again.
   */
  complete(request: ChatRequest, attempt: AttemptContext, caller?: CallerJson): Promise<Completed>
  /**
   * Resolves once the upstream has accepted the request (status and headers seen). The iterator
   * yields batches of OpenAI chunks (objects, or raw JSON text relayed as is), throws an
   * UpstreamError if the stream breaks, and ends with a chunk carrying `usage` when the upstream
   * reports it.
   */
  stream(request: ChatRequest, attempt: AttemptContext, caller?: CallerJson): Promise<AsyncIterator<StreamChunk[]>>
  /** Embeddings (OpenAI's API); absent for kinds that have none. */
  embed?(request: EmbeddingsRequest, attempt: AttemptContext, caller?: CallerJson): Promise<Embedded>
  /** Why this upstream cannot embed with `model` (a chat model), or null. */
  cannotEmbed?(model: string): Unsupported | null
  /** Anthropic's Messages API, relayed as sent (kind anthropic only). */
  messages?: MessagesApi
  /** OpenAI's Responses API, relayed as sent (openai-kind upstreams with `responses = "native"`). */
  responses?: ResponsesApi
  /** Google's generateContent API, relayed as sent (kinds gemini and vertex): Gemini CLI and the Google GenAI SDK. */
  gemini?: GeminiApi
  /** The input tokens of a request: by the provider's own counter, or locally; within the caller's attempt when given. */
  countTokens?(request: ChatRequest, attempt?: AttemptContext): Promise<number>
  /**
   * Whether `model` reads signed thinking with this signature (`''`: redacted thinking) from a
   * Messages caller's history as it is, so it goes on as the pivot's thinking_blocks: Claude's own
   * on Bedrock and Vertex, the wrapped Gemini signatures on Gemini. Absent: none.
   */
  readsThinking?(signature: string, model: string): boolean
}

/** What an upstream may make the gateway hold in memory, at most. */
export interface UpstreamBounds {
  /** One SSE event, in characters. */
  maxSseEventChars: number
  /** One JSON answer, in bytes. */
  maxBodyBytes: number
}

/** What every provider is built with, besides its own settings. */
export interface ProviderContext {
  /** The environment, for the secret named by `api_key_env`. */
  env: Readonly<Record<string, string | undefined>>
  bounds: UpstreamBounds
}

/** Embeddings as a provider received them; `text` is the upstream's JSON when `answer` is exactly its parse. */
export interface Embedded {
  answer: EmbeddingsResponse
  text: string | null
}

/** Headers a caller of the Messages API sends that Anthropic upstreams get too. */
export interface AnthropicHeaders {
  version: string | null
  beta: string | null
}

/** An Anthropic stream event: its `data:` text as the upstream wrote it, and its parse. */
export interface AnthropicEvent {
  data: string
  event: StreamEvent
}

/** Anthropic's own Messages API, relayed as sent: bodies are the caller's text, model already replaced. */
export interface MessagesApi {
  complete(body: string, attempt: AttemptContext, headers: AnthropicHeaders): Promise<{ text: string; message: MessageResponse }>
  /** Resolves once the upstream accepted the request; yields its events as they arrive, through message_stop. */
  stream(body: string, attempt: AttemptContext, headers: AnthropicHeaders): Promise<AsyncIterator<AnthropicEvent[]>>
  countTokens(body: string, attempt: AttemptContext, headers: AnthropicHeaders): Promise<{ input_tokens: number }>
}

/** An upstream kind: what `kind = "..."` in the config names. One folder per kind under providers/. */
export interface ProviderKind extends UpstreamKindFacts {
  create(settings: UpstreamSettings, context: ProviderContext): Provider
}

/** A Responses stream event: its type, and its `data:` text as the upstream wrote it. */
export interface ResponsesEvent {
  type: string
  data: string
}

/** OpenAI's own Responses API, relayed as sent: bodies are the caller's text, model already replaced. */
export interface ResponsesApi {
  create(body: string, attempt: AttemptContext): Promise<{ text: string; response: Record<string, unknown> }>
  /** Resolves once the upstream accepted the request; yields its events as they arrive, through the terminal one. */
  stream(body: string, attempt: AttemptContext): Promise<AsyncIterator<ResponsesEvent[]>>
  /** A call on a response the upstream holds (`GET <id>`, `DELETE <id>`, `GET <id>/input_items?...`, `POST input_tokens`); its JSON text. */
  call(method: 'GET' | 'POST' | 'DELETE', path: string, body: string | null, attempt: AttemptContext): Promise<string>
}

/** A `:streamGenerateContent?alt=sse` chunk: its `data:` text as the upstream wrote it, and its parse. */
export interface GeminiEvent {
  data: string
  chunk: GenerateContentResponse
}

/**
 * Google's own generateContent API, relayed as sent: `body` is the caller's text, and `model` the
 * target's (it goes in the URL, `.../models/{model}:generateContent`, not in the body). Bodies are in
 * the Gemini API's shape, as Gemini CLI and the SDK send them; a Vertex AI upstream adapts what
 * differs (countTokens takes the members of `generateContentRequest` directly).
 */
export interface GeminiApi {
  /** Whether `model` takes this API (on Vertex AI, Claude models take Anthropic's instead); absent: every model. */
  serves?(model: string): boolean
  generateContent(model: string, body: string, attempt: AttemptContext): Promise<{ text: string; response: GenerateContentResponse }>
  /** Resolves once the upstream accepted the request; yields its chunks as they arrive, through the last one. */
  streamGenerateContent(model: string, body: string, attempt: AttemptContext): Promise<AsyncIterator<GeminiEvent[]>>
  countTokens(model: string, body: string, attempt: AttemptContext): Promise<CountTokensResponse>
}
