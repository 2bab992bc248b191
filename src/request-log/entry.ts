/**
 * One request as the request log keeps it: what an on-call engineer needs to find one bad request
 * and see what happened to it. Built once, when the request ends, from its RequestRecord; kept as
 * JSON text (the API's shape, snake_case) beside the few columns the listing filters on.
 */
import type { GatewayError } from '../errors'
import type { RequestRecord } from '../observe/request-record'

/** One upstream attempt as the log shows it: times in ms after the request arrived. */
export interface LoggedAttempt {
  upstream: string
  model: string
  start_ms: number
  /** Null while it ran when the request ended (an abandoned stream). */
  end_ms: number | null
  latency_ms: number | null
  /** The status the gateway would answer for this attempt's failure; null when it succeeded. */
  status: number | null
  /** `ok`, or the failure's code or type (`upstream_timeout`, `upstream_rate_limited`...); `skipped` for a target passed over. */
  outcome: string | null
  /** Why a target was passed over without being asked: `rpm`, `tpm`, `resting`, `circuit_open` or `slow`; absent for attempts. */
  skipped?: string
}

/** A request log record, as `GET /admin/requests/{id}` answers it. */
export interface LoggedRequest {
  /** The request's x-request-id. */
  id: string
  /** When it ended: its record was made (RFC 3339, ms). */
  time: string
  key_id: string | null
  key_prefix: string | null
  tier: string | null
  /** The inbound API: chat.completions, messages, responses, embeddings, count_tokens, gemini.generateContent... */
  api: string
  method: string
  path: string
  route: string | null
  alias: string | null
  /** The upstream and model that served, or were tried last. */
  upstream: string | null
  upstream_model: string | null
  attempts: LoggedAttempt[]
  status: number
  error_type: string | null
  error_code: string | null
  error_message: string | null
  latency_ms: number
  /** Time to the first byte of a stream's answer; null for JSON answers. */
  ttft_ms: number | null
  prompt_tokens: number
  completion_tokens: number
  /** The tokens are the gateway's estimate: the caller cut the stream before the upstream reported usage. */
  usage_estimated: boolean
  cost_usd: number
  cache: 'hit' | 'miss' | 'bypass' | null
  cache_saved_usd: number | null
  response_id: string | null
  finish_reasons: string[] | null
  /** Request fields the target did not get, as named in x-svc-dropped. */
  dropped: string[]
  user_agent: string | null
  /** Kept per `[request_log] bodies`: redacted, cut at `max_body_bytes` with a marker; null when not kept. */
  request_body: string | null
  response_body: string | null
}

/** What the listing filters on, beside the record's JSON text. */
export interface LogRow {
  /** Unique per record, whoever wrote it: what makes a record written twice (replayed journals) stored once. */
  uid: string
  id: string
  /** When the request ended, ms since the epoch. */
  at: number
  keyId: string | null
  alias: string | null
  upstream: string | null
  status: number
  errorType: string | null
  /** The LoggedRequest as JSON. */
  record: string
}

/** Nano-dollars as USD, exact to the nano-dollar. */
const usd = (nanos: number): number => Math.round(nanos) / 1e9

/**
 * A record as it is stored: what is unknown or empty is left out (about half the bytes of a record
 * of a plain request, made and written the faster), and `time` is the row's `at`. `requestOf` makes
 * the whole LoggedRequest back.
 */
export type StoredRequest = { [K in Exclude<keyof LoggedRequest, 'time' | 'attempts'>]?: LoggedRequest[K] | undefined } & Pick<
  LoggedRequest,
  'id' | 'api' | 'method' | 'path' | 'status' | 'latency_ms' | 'prompt_tokens' | 'completion_tokens' | 'cost_usd'
> & { attempts?: StoredAttempt[] }

/** An attempt as stored: what is unknown left out. */
type StoredAttempt = { [K in keyof LoggedAttempt]?: LoggedAttempt[K] | undefined } & Pick<LoggedAttempt, 'upstream' | 'model' | 'start_ms'>

function attemptsOf(record: RequestRecord): StoredAttempt[] | undefined {
  const log = record.attemptLog
  if (log === undefined || log.length === 0) return undefined
  return log.map((a) => ({
    upstream: a.upstream,
    model: a.model,
    start_ms: Math.round(a.startMs),
    end_ms: a.endMs === undefined ? undefined : Math.round(a.endMs),
    latency_ms: a.endMs === undefined ? undefined : Math.round(a.endMs - a.startMs),
    status: a.status,
    outcome: a.outcome,
    skipped: a.skipped,
  }))
}

/** The bodies a record keeps (already redacted and cut), or null for none. */
export interface KeptBodies {
  request: string | null
  response: string | null
}

/**
 * The record of a request that ended with `status` (and `error`), as stored. Nothing here copies a
 * body: `bodies` are made by the caller only when they are kept.
 */
export function loggedRequest(record: RequestRecord, status: number, error: GatewayError | undefined, bodies: KeptBodies | null): StoredRequest {
  return {
    id: record.id,
    key_id: record.keyId,
    key_prefix: record.keyPrefix,
    tier: record.tier,
    api: record.api ?? 'unknown',
    method: record.method,
    path: record.path,
    route: record.route,
    alias: record.alias,
    upstream: record.upstream,
    upstream_model: record.upstreamModel,
    attempts: attemptsOf(record),
    status,
    error_type: error?.type,
    error_code: error?.code,
    error_message: error?.message,
    latency_ms: Math.round(performance.now() - record.start),
    ttft_ms: record.ttfbMs,
    prompt_tokens: record.promptTokens ?? 0,
    completion_tokens: record.completionTokens ?? 0,
    usage_estimated: record.usageEstimated || undefined,
    cost_usd: usd(record.costNanos ?? 0),
    cache: record.cache,
    cache_saved_usd: record.cacheSavedNanos === undefined ? undefined : usd(record.cacheSavedNanos),
    response_id: record.responseId,
    finish_reasons: record.finishReasons,
    dropped: record.dropped,
    user_agent: record.userAgent,
    request_body: bodies?.request ?? undefined,
    response_body: bodies?.response ?? undefined,
  }
}

/** The row of a record that ended at `at` (ms since the epoch): its filter columns and its JSON, made once. */
export const logRowOf = (uid: string, at: number, stored: StoredRequest): LogRow => ({
  uid,
  id: stored.id,
  at,
  keyId: stored.key_id ?? null,
  alias: stored.alias ?? null,
  upstream: stored.upstream ?? null,
  status: stored.status,
  errorType: stored.error_type ?? null,
  record: JSON.stringify(stored),
})

/** A stored row as the API shows it: every field there, null when unknown. */
export function requestOf(row: LogRow): LoggedRequest {
  const r = JSON.parse(row.record) as StoredRequest
  return {
    id: r.id,
    time: new Date(row.at).toISOString(),
    key_id: r.key_id ?? null,
    key_prefix: r.key_prefix ?? null,
    tier: r.tier ?? null,
    api: r.api,
    method: r.method,
    path: r.path,
    route: r.route ?? null,
    alias: r.alias ?? null,
    upstream: r.upstream ?? null,
    upstream_model: r.upstream_model ?? null,
    attempts: (r.attempts ?? []).map((a) => ({
      upstream: a.upstream,
      model: a.model,
      start_ms: a.start_ms,
      end_ms: a.end_ms ?? null,
      latency_ms: a.latency_ms ?? null,
      status: a.status ?? null,
      outcome: a.outcome ?? null,
      ...(a.skipped === undefined ? {} : { skipped: a.skipped }),
    })),
    status: r.status,
    error_type: r.error_type ?? null,
    error_code: r.error_code ?? null,
    error_message: r.error_message ?? null,
    latency_ms: r.latency_ms,
    ttft_ms: r.ttft_ms ?? null,
    prompt_tokens: r.prompt_tokens,
    completion_tokens: r.completion_tokens,
    usage_estimated: r.usage_estimated ?? false,
    cost_usd: r.cost_usd,
    cache: r.cache ?? null,
    cache_saved_usd: r.cache_saved_usd ?? null,
    response_id: r.response_id ?? null,
    finish_reasons: r.finish_reasons ?? null,
    dropped: r.dropped ?? [],
    user_agent: r.user_agent ?? null,
    request_body: r.request_body ?? null,
    response_body: r.response_body ?? null,
  }
}
