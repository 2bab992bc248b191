import type { UpstreamSettings } from '../config/file'
import type { ChatCompletion, ChatRequest, StreamChunk } from '../chat/types'

/** What a provider gets for one attempt. */
export interface AttemptContext {
  /** Aborted on the caller's disconnect or the attempt's timeouts, with the reason as a GatewayError. */
  signal: AbortSignal
  /** Call when the upstream's response headers arrive: it ends the connect timeout. */
  responded(): void
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

/** The caller's request body as sent, and the model it names (the alias). */
export interface CallerJson {
  text: string
  model: string
}

/** One upstream, ready to serve. Requests arrive with `model` already set to the upstream's model. */
export interface Provider {
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
  stream(request: ChatRequest, attempt: AttemptContext): Promise<AsyncIterator<StreamChunk[]>>
}

/** An upstream kind: what `kind = "..."` in the config names. One folder per kind under providers/. */
export interface ProviderKind {
  kind: string
  needsBaseUrl: boolean
  defaultBaseUrl: string | null
  /** Models this kind can serve; null means any name the upstream accepts. */
  models: readonly string[] | null
  create(settings: UpstreamSettings, env: Readonly<Record<string, string | undefined>>): Provider
}
