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
  /** `ok`, or the failure's code or type (`upstream_timeout`, `upstream_rate_limited`...). */
  outcome: string | null
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

function attemptsOf(record: RequestRecord): LoggedAttempt[] {
  return (record.attemptLog ?? []).map((a) => ({
    upstream: a.upstream,
    model: a.model,
    start_ms: Math.round(a.startMs),
    end_ms: a.endMs === undefined ? null : Math.round(a.endMs),
    latency_ms: a.endMs === undefined ? null : Math.round(a.endMs - a.startMs),
    status: a.status ?? null,
    outcome: a.outcome ?? null,
  }))
}

/** The bodies a record keeps (already redacted and cut), or null for none. */
export interface KeptBodies {
  request: string | null
  response: string | null
}

/**
 * The record of a request that ended with `status` (and `error`) at `at` (ms since the epoch).
 * Nothing here copies a body: `bodies` are made by the caller only when they are kept.
 */
export function loggedRequest(record: RequestRecord, status: number, error: GatewayError | undefined, at: number, bodies: KeptBodies | null): LoggedRequest {
  return {
    id: record.id,
    time: new Date(at).toISOString(),
    key_id: record.keyId ?? null,
    key_prefix: record.keyPrefix ?? null,
    tier: record.tier ?? null,
    api: record.api ?? 'unknown',
    method: record.method,
    path: record.path,
    route: record.route ?? null,
    alias: record.alias ?? null,
    upstream: record.upstream ?? null,
    upstream_model: record.upstreamModel ?? null,
    attempts: attemptsOf(record),
    status,
    error_type: error?.type ?? null,
    error_code: error?.code ?? null,
    error_message: error?.message ?? null,
    latency_ms: Math.round(performance.now() - record.start),
    ttft_ms: record.ttfbMs ?? null,
    prompt_tokens: record.promptTokens ?? 0,
    completion_tokens: record.completionTokens ?? 0,
    usage_estimated: record.usageEstimated === true,
    cost_usd: usd(record.costNanos ?? 0),
    cache: record.cache ?? null,
    cache_saved_usd: record.cacheSavedNanos === undefined ? null : usd(record.cacheSavedNanos),
    response_id: record.responseId ?? null,
    finish_reasons: record.finishReasons ?? null,
    dropped: record.dropped ?? [],
    user_agent: record.userAgent ?? null,
    request_body: bodies?.request ?? null,
    response_body: bodies?.response ?? null,
  }
}

/** The row of a record: its filter columns and its JSON, made once. */
export const logRowOf = (uid: string, at: number, logged: LoggedRequest): LogRow => ({
  uid,
  id: logged.id,
  at,
  keyId: logged.key_id,
  alias: logged.alias,
  upstream: logged.upstream,
  status: logged.status,
  errorType: logged.error_type,
  record: JSON.stringify(logged),
})
