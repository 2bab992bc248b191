import { t } from 'elysia'
import { MAX_PAGE } from '../request-log/store'
import { Int } from './schemas'

const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(schema: T) => t.Union([schema, t.Null()])

/** One upstream attempt of a logged request: times in ms after the request arrived. */
export const LoggedAttemptSchema = t.Object(
  {
    upstream: t.String(),
    model: t.String(),
    start_ms: Int(),
    end_ms: Nullable(Int()),
    latency_ms: Nullable(Int()),
    status: Nullable(Int({ description: "The status this attempt's failure maps to; null when it succeeded" })),
    outcome: Nullable(t.String({ description: '`ok`, or the failure: `upstream_timeout`, `upstream_rate_limited`, `upstream_error`...' })),
    skipped: t.Optional(t.String({ description: 'Why the target was passed over without being asked: `rpm`, `tpm`, `resting`, `circuit_open`, `slow`' })),
  },
  { title: 'LoggedAttempt' },
)

/** A request log record (see docs/request-log.md). */
export const LoggedRequestSchema = t.Object(
  {
    id: t.String({ description: "The request's x-request-id" }),
    time: t.String({ description: 'When the request ended (RFC 3339, UTC)' }),
    key_id: Nullable(t.String()),
    key_prefix: Nullable(t.String()),
    tier: Nullable(t.String()),
    api: t.String({ examples: ['chat.completions', 'messages', 'responses', 'embeddings', 'count_tokens', 'gemini.generateContent'] }),
    method: t.String(),
    path: t.String(),
    route: Nullable(t.String({ description: 'The route template that matched' })),
    alias: Nullable(t.String()),
    upstream: Nullable(t.String({ description: 'The upstream that served, or was tried last' })),
    upstream_model: Nullable(t.String()),
    attempts: t.Array(LoggedAttemptSchema),
    status: Int(),
    error_type: Nullable(t.String()),
    error_code: Nullable(t.String()),
    error_message: Nullable(t.String()),
    latency_ms: Int(),
    ttft_ms: Nullable(Int({ description: "Streams: time to the answer's first byte" })),
    prompt_tokens: Int(),
    completion_tokens: Int(),
    usage_estimated: t.Boolean({ description: 'The caller cut the stream before the upstream reported usage: tokens are the gateway’s estimate' }),
    cost_usd: t.Number(),
    cache: Nullable(t.Union([t.Literal('hit'), t.Literal('miss'), t.Literal('bypass')])),
    cache_saved_usd: Nullable(t.Number()),
    response_id: Nullable(t.String()),
    finish_reasons: Nullable(t.Array(t.String())),
    dropped: t.Array(t.String(), { description: 'Request fields the target did not get, as named in x-svc-dropped' }),
    user_agent: Nullable(t.String()),
    request_body: Nullable(t.String({ description: 'Kept per [request_log] bodies: redacted, cut at max_body_bytes with a marker' })),
    response_body: Nullable(t.String({ description: "A JSON answer, or a stream's answer assembled from its events" })),
  },
  { title: 'LoggedRequest' },
)

export const RequestPageSchema = t.Object(
  {
    data: t.Array(LoggedRequestSchema),
    next_cursor: Nullable(t.String({ description: 'Pass as `cursor` for the next page; null on the last page' })),
  },
  { title: 'RequestPage' },
)

export const RequestQuerySchema = t.Object({
  key_id: t.Optional(t.String()),
  alias: t.Optional(t.String()),
  upstream: t.Optional(t.String({ description: 'The upstream that served (or was tried last)' })),
  status: t.Optional(t.String({ description: 'A code (`429`) or a class (`4xx`, `5xx`)', examples: ['429', '5xx'] })),
  error_type: t.Optional(t.String({ examples: ['rate_limit_error', 'api_error'] })),
  since: t.Optional(t.String({ description: 'Records from this time on (RFC 3339 or ms since the epoch), inclusive' })),
  until: t.Optional(t.String({ description: 'Records up to this time (RFC 3339 or ms since the epoch), inclusive' })),
  limit: t.Optional(
    t.Integer({
      minimum: 1,
      maximum: MAX_PAGE,
      description: `Records per page (default 50, at most ${MAX_PAGE})`,
      error: `Invalid request: limit must be a whole number from 1 to ${MAX_PAGE}`,
    }),
  ),
  cursor: t.Optional(t.String({ description: "The previous page's next_cursor" })),
})
