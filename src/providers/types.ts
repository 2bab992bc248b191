import type { UpstreamSettings } from '../config/file'
import type { ChatCompletion, ChatCompletionChunk, ChatRequest } from '../chat/types'

/** One upstream, ready to serve. Requests arrive with `model` already set to the upstream's model. */
export interface Provider {
  complete(request: ChatRequest, signal: AbortSignal): Promise<ChatCompletion>
  /**
   * Resolves once the upstream has accepted the request (status and headers seen), so failures
   * before the first byte can still fail over. The iterator throws an UpstreamError if the stream
   * breaks, and always ends with a chunk carrying `usage` when the upstream reports it.
   */
  stream(request: ChatRequest, signal: AbortSignal): Promise<AsyncIterator<ChatCompletionChunk>>
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
