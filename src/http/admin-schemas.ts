import { t } from 'elysia'
import { type KeyPatch, MAX_EXPIRES_IN_DAYS, MAX_KEY_LIMIT } from '../auth/keys'
import { Int, UsageCounterFields } from './schemas'

const Limit = (field: string, description: string) => {
  const maximum = field === 'expires_in_days' ? MAX_EXPIRES_IN_DAYS : MAX_KEY_LIMIT
  return Int({ minimum: 1, maximum, description, error: `Invalid request: ${field} must be a whole number from 1 to ${maximum}` })
}

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
    rpm: t.Union([Int(), t.Null()]),
    tpm: t.Union([Int(), t.Null()]),
    max_concurrent: t.Union([Int(), t.Null()]),
    monthly_token_quota: t.Union([Int(), t.Null()]),
    daily_request_quota: t.Union([Int(), t.Null()]),
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
  t.Optional(
    t.Union([Limit(field, description), t.Null()], {
      error: `Invalid request: ${field} must be a whole number from 1 to ${field === 'expires_in_days' ? MAX_EXPIRES_IN_DAYS : MAX_KEY_LIMIT}, or null`,
    }),
  )

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

/** The admin API's snake_case key fields, as the key functions take them. */
export function keyFieldsOf(body: {
  name?: string
  tier?: string
  expires_in_days?: number | null
  rpm?: number | null
  tpm?: number | null
  max_concurrent?: number | null
  monthly_token_quota?: number | null
  daily_request_quota?: number | null
}): KeyPatch {
  return {
    name: body.name,
    tier: body.tier,
    expiresInDays: body.expires_in_days,
    requestsPerMinute: body.rpm,
    tokensPerMinute: body.tpm,
    maxConcurrent: body.max_concurrent,
    monthlyTokenQuota: body.monthly_token_quota,
    dailyRequestQuota: body.daily_request_quota,
  }
}

export const UsageReportSchema = t.Object(
  {
    totals: t.Object(UsageCounterFields),
    data: t.Array(
      t.Object({
        key_id: t.String(),
        key_prefix: t.String(),
        date: t.String(),
        alias: t.String(),
        upstream: t.String(),
        ...UsageCounterFields,
        latency_ms_sum: Int(),
      }),
    ),
  },
  { title: 'UsageReport' },
)
