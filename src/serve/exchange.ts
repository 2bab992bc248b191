import type { Caller } from '../auth/authenticate'
import type { GatewayError, Unsupported } from '../errors'
import type { RequestRecord } from '../observe/request-record'
import type { AttemptContext } from '../providers/types'
import type { Alias, Target } from '../routing/table'
import type { TokenBound } from '../spend/estimate'
import type { Usage } from '../wire/pivot/types'

/**
 * One inbound API's side of serving a request (chat completions, Messages, embeddings): how to ask
 * a target, and how its answer reaches the caller. The pipeline (serve.ts) does the rest the same
 * way for all of them: keys, tiers, limits, routing, retries, circuits, usage, headers.
 */
export interface Exchange {
  /** The model the caller named (an alias). */
  model: string
  /** Refuses the alias as a whole (a message thread its targets cannot reach); absent: every alias will do. */
  checkAlias?(alias: Alias): void
  /** Why a target cannot serve this request as asked (it is then skipped), or null. */
  cannotServe(target: Target): Unsupported | null
  /** The hints of the request a target gets without (it cannot use them): named in the answer's x-svc-dropped. */
  dropped?(target: Target): readonly string[]
  /** One attempt for a JSON answer: the caller's body (its model already the alias) and the usage it reports. */
  complete(target: Target, attempt: AttemptContext): Promise<Answer>
  /** Set when the caller asked for a stream. */
  stream: StreamSide | null
  /** The most tokens the request may use (for what a budget reserves); asked only for keys with a budget. */
  tokenBound(): TokenBound
  /** What the response cache needs (serve/cache.ts); absent: its answers are never cached (a message thread, a stored response). */
  cache?: CacheSide
}

export interface CacheSide {
  /** The request's body as it is served (parsed; a Responses request with its item references resolved): its cache key is made from it. */
  request: object
  /**
   * Its JSON text as sent, while the request is just that text (undefined when the gateway did not
   * read it, or changed the request): a repeat of the same text gets its key at once.
   */
  text: string | undefined
  /**
   * A cached JSON answer as this request's own: its JSON text, or for a stream the caller's whole SSE
   * text, ended as its dialect ends. Absent: the answer is served as kept (an API that does not stream).
   */
  fromCache?(answer: string, usage: Usage | null, stream: boolean): string | Promise<string>
  /**
   * Set when this request's stream of a cached answer depends on nothing but the answer and this
   * key (no fresh id, nothing kept): the stream made for one hit then serves the next hits on the
   * same entry.
   */
  streamVariant?: string
}

export interface StreamSide {
  /**
   * One attempt for a stream: resolves once the upstream's first events are in, so a failure before
   * the caller has seen a byte can still be retried or failed over.
   */
  open(target: Target, attempt: AttemptContext): Promise<EventStream>
  /** The caller's SSE text for a stream that broke after its first byte (no normal end follows it). */
  failureEvent(error: GatewayError): string
  /** The prompt's tokens, estimated: charged when the caller cut the stream before the upstream reported usage. */
  estimatedPromptTokens(): number
}

export interface Answer {
  body: string
  usage: Usage | null
  /**
   * What must be durable before the answer goes out besides its usage (a response kept for
   * previous_response_id): awaited alongside the usage, not before it. Never rejects.
   */
  kept?: Promise<void>
}

/** An upstream stream being relayed, as the caller's SSE text. */
export interface EventStream {
  /** The next text to send ('' when an upstream read made none), or null once the upstream has ended. */
  next(): Promise<string | null>
  /** The usage reported so far (complete once `next` returned null). */
  usage(): Usage | null
  /** Characters of generated text (content, reasoning, tool arguments) read from the upstream so far. */
  generated(): number
  /**
   * The text that ends the stream for the caller (`data: [DONE]`, Anthropic's message_stop...), sent
   * only once the request is counted: a caller that saw the end of a stream has been billed.
   */
  end(): string
  /** As Answer's `kept`, for a stream: set once `next` returned null, awaited with the usage before `end()` goes out. */
  kept?(): Promise<void>
  /** Stops the upstream (the caller left). */
  cancel(): Promise<void>
}

/** One request to serve: who asked, and where its answer goes. */
export interface ServeCall {
  caller: Caller
  /** Fires when the caller disconnects. */
  clientSignal: AbortSignal
  /** Response headers under construction (Elysia's `set.headers`); errors carry them too. */
  headers: Record<string, string | number>
  /** The request's record for its log line and metrics. */
  record: RequestRecord
  /** The caller's request headers (the cache reads its directives from them); absent: none of note. */
  requestHeaders?: Headers
}
