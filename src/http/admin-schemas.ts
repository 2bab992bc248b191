import { t } from 'elysia'

const Limit = (field: string, description: string) => t.Integer({ minimum: 1, description, error: `Invalid request: ${field} must be a positive integer` })

/** A key as the admin API and `keys list --json` show it: never the key, never its hash. */
export const KeyRecordSchema = t.Object(
  {
    id: t.String(),
    prefix: t.String(),
    name: t.String(),
    tier: t.String(),
    created_at: t.String(),
    expires_at: t.Union([t.String(), t.Null()]),
    revoked_at: t.Union([t.String(), t.Null()]),
    rpm: t.Union([t.Integer(), t.Null()]),
    tpm: t.Union([t.Integer(), t.Null()]),
    max_concurrent: t.Union([t.Integer(), t.Null()]),
    monthly_token_quota: t.Union([t.Integer(), t.Null()]),
    daily_request_quota: t.Union([t.Integer(), t.Null()]),
  },
  { title: 'KeyRecord' },
)

export const KeyCreateSchema = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 100 }),
    tier: t.String({ minLength: 1 }),
    expires_in_days: t.Optional(Limit('expires_in_days', 'The key stops working after this many days')),
    rpm: t.Optional(Limit('rpm', 'Requests per minute, overriding the tier')),
    tpm: t.Optional(Limit('tpm', 'Tokens per minute, overriding the tier')),
    max_concurrent: t.Optional(Limit('max_concurrent', 'Requests in flight, overriding the tier')),
    monthly_token_quota: t.Optional(Limit('monthly_token_quota', 'Tokens per UTC month')),
    daily_request_quota: t.Optional(Limit('daily_request_quota', 'Requests per UTC day')),
  },
  { additionalProperties: false },
)

const nullable = (field: string, description: string) =>
  t.Optional(t.Union([Limit(field, description), t.Null()], { error: `Invalid request: ${field} must be a positive integer or null` }))

export const KeyPatchSchema = t.Object(
  {
    name: t.Optional(t.String({ minLength: 1, maxLength: 100 })),
    tier: t.Optional(t.String({ minLength: 1 })),
    expires_in_days: nullable('expires_in_days', 'Days from now; null: never expires'),
    rpm: nullable('rpm', 'null: use the tier value'),
    tpm: nullable('tpm', 'null: use the tier value'),
    max_concurrent: nullable('max_concurrent', 'null: use the tier value'),
    monthly_token_quota: nullable('monthly_token_quota', 'null: use the tier value'),
    daily_request_quota: nullable('daily_request_quota', 'null: use the tier value'),
  },
  { additionalProperties: false },
)

const Counters = {
  requests: t.Integer(),
  errors: t.Integer(),
  prompt_tokens: t.Integer(),
  completion_tokens: t.Integer(),
  total_tokens: t.Integer(),
}

export const UsageReportSchema = t.Object(
  {
    totals: t.Object(Counters),
    data: t.Array(
      t.Object({
        key_id: t.String(),
        key_prefix: t.String(),
        date: t.String(),
        alias: t.String(),
        upstream: t.String(),
        ...Counters,
        latency_ms_sum: t.Integer(),
      }),
    ),
  },
  { title: 'UsageReport' },
)
