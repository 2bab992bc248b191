/** One upstream attempt, as the request log and traces show it. */
export interface AttemptRecord {
  upstream: string
  model: string
  /** Milliseconds after the request arrived that the attempt started, and ended (unset while it runs). */
  startMs: number
  endMs?: number
  /** How it ended: `ok`, or the error's code (`upstream_timeout`, `upstream_rate_limited`...) or type. */
  outcome?: string
  /** The status the gateway would answer for this attempt's failure (unset when it succeeded). */
  status?: number
  /** Set when the target was passed over without being asked (then `outcome` is `skipped`): why. */
  skipped?: 'rpm' | 'tpm' | 'resting' | 'circuit_open' | 'slow'
}

/** What the gateway learns about one request as it goes: for its log line and metrics. */
export interface RequestRecord {
  id: string
  /** performance.now() when the request arrived. */
  start: number
  method: string
  path: string
  keyPrefix?: string
  tier?: string
  alias?: string
  upstream?: string
  upstreamModel?: string
  attempts?: number
  /** Each upstream attempt in order, retries and fallbacks included. */
  attemptLog?: AttemptRecord[]
  /** Milliseconds spent waiting on upstreams (all attempts). */
  upstreamMs?: number
  /** For streams: milliseconds until the first byte went to the caller. */
  ttfbMs?: number
  promptTokens?: number
  completionTokens?: number
  /** The request's exact cost in nano-dollars. */
  costNanos?: number
  /** The tokens are the gateway's estimate: the caller cut the stream before the upstream reported usage. */
  usageEstimated?: boolean
  /** The caller's key id (the request log filters by it; the log line shows only the prefix). */
  keyId?: string
  /** The inbound API: `chat.completions`, `messages`, `responses`, `embeddings`, `count_tokens`... */
  api?: string
  /** The route template that matched (`/v1/responses/:id`), for traces and the request log. */
  route?: string
  userAgent?: string
  /** The upstream's own id of the answer, and why it stopped (finish reasons as the upstream said them). */
  responseId?: string
  finishReasons?: string[]
  /** Request fields left out for the target, as named in `x-svc-dropped`. */
  dropped?: string[]
  /** The response cache's verdict, and what a hit saved, in nano-dollars. */
  cache?: 'hit' | 'miss' | 'bypass'
  cacheSavedNanos?: number
  /** Message content, kept only when body logging is on. */
  messages?: unknown
  /** The request's JSON text as the caller sent it (a reference, not a copy): the request log keeps it when its bodies are on. */
  requestBody?: string
  /** The answer's JSON text (a stream's, assembled from its events): the request log keeps it when its bodies are on. */
  responseBody?: string
  /** The request log's record of this request, once made: its unique id and the status it says. */
  logged?: { uid: string; status: number }
  /** A stream writes its own log line when it ends, not when its headers go out. */
  deferred: boolean
  finished: boolean
}

const records = new WeakMap<Request, RequestRecord>()

export function beginRequest(request: Request, id: string): RequestRecord {
  const url = request.url
  const pathStart = url.indexOf('/', url.indexOf('//') + 2)
  const queryStart = url.indexOf('?', pathStart)
  const record: RequestRecord = {
    id,
    start: performance.now(),
    method: request.method,
    path: pathStart === -1 ? '/' : url.slice(pathStart, queryStart === -1 ? undefined : queryStart),
    deferred: false,
    finished: false,
  }
  records.set(request, record)
  return record
}

/** The request's record; one is made on the spot for requests that bypassed the conventions plugin. */
export const recordOf = (request: Request): RequestRecord => records.get(request) ?? beginRequest(request, crypto.randomUUID())

/** Whole milliseconds since the gateway started handling this request. */
export const elapsedMs = (record: RequestRecord): number => Math.round(performance.now() - record.start)
