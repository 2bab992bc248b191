import { t } from 'elysia'
import { type KeyPatch, MAX_BUDGET_USD, MAX_EXPIRES_IN_DAYS, MAX_KEY_LIMIT } from '../auth/keys'
import { nanosOfUsd } from '../spend/price'
import { Int, UsageCounterFields } from './schemas'

const Limit = (field: string, description: string) => {
  const maximum = field === 'expires_in_days' ? MAX_EXPIRES_IN_DAYS : MAX_KEY_LIMIT
  return Int({ minimum: 1, maximum, description, error: `Invalid request: ${field} must be a whole number from 1 to ${maximum}` })
}

const budgetError = (field: string) => `Invalid request: ${field} must be an amount of USD above 0 and at most ${MAX_BUDGET_USD}, or null`
const Budget = (field: string, description: string) =>
  t.Number({ exclusiveMinimum: 0, maximum: MAX_BUDGET_USD, description, error: budgetError(field).replace(', or null', '') })
const nanosOrNull = (amount: number | null | undefined) => (amount === undefined || amount === null ? amount : nanosOfUsd(amount))

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
    daily_budget_usd: t.Union([t.Number(), t.Null()]),
    monthly_budget_usd: t.Union([t.Number(), t.Null()]),
  },
  { title: 'KeyRecord' },
)

/** Spend beside the budgets in force (the key's own, else its tier's), UTC periods, and today's traffic. */
export const KeySpendSchema = t.Object({
  spend_today_usd: t.Number(),
  spend_month_usd: t.Number(),
  daily_budget_in_force_usd: t.Union([t.Number(), t.Null()]),
  monthly_budget_in_force_usd: t.Union([t.Number(), t.Null()]),
  requests_today: Int({ description: 'Requests today (UTC), errors included' }),
  tokens_today: Int({ description: 'Prompt plus completion tokens today (UTC)' }),
})

/** `GET /admin/keys`: one page of the listing. */
export const KeyListQuerySchema = t.Object({
  limit: t.Optional(t.String({ description: 'Keys per page, 1 to 1000 (default 1000)', examples: ['100'] })),
  cursor: t.Optional(t.String({ description: "The previous page's `next_cursor`" })),
  q: t.Optional(
    t.String({ description: 'Keeps the keys whose name, prefix or id holds this text (any case, at most 100 characters)', examples: ['sk-cg-Ab'] }),
  ),
})

export const KeyPageSchema = t.Object(
  {
    data: t.Array(t.Composite([KeyRecordSchema, KeySpendSchema])),
    next_cursor: t.Union([t.String(), t.Null()], { description: 'Pass as `cursor` for the next page; null on the last page' }),
  },
  { title: 'KeyPage' },
)

/** Checked again by KeyService (checkName): printable text only, so no name can forge rows where it is printed. */
const NAME_DESCRIPTION =
  'Printable text, 1 to 100 characters: no control characters (CR, LF, tab, ESC...), line separators or direction overrides (400 naming `name`)'

export const KeyCreateSchema = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 100, description: NAME_DESCRIPTION }),
    tier: t.String({ minLength: 1 }),
    expires_in_days: t.Optional(Limit('expires_in_days', 'The key stops working after this many days')),
    rpm: t.Optional(Limit('rpm', 'Requests per minute, overriding the tier')),
    tpm: t.Optional(Limit('tpm', 'Tokens per minute, overriding the tier')),
    max_concurrent: t.Optional(Limit('max_concurrent', 'Requests in flight, overriding the tier')),
    monthly_token_quota: t.Optional(Limit('monthly_token_quota', 'Tokens per UTC month')),
    daily_request_quota: t.Optional(Limit('daily_request_quota', 'Requests per UTC day')),
    daily_budget_usd: t.Optional(Budget('daily_budget_usd', 'USD per UTC day, overriding the tier')),
    monthly_budget_usd: t.Optional(Budget('monthly_budget_usd', 'USD per UTC month, overriding the tier')),
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
    name: t.Optional(t.String({ minLength: 1, maxLength: 100, description: NAME_DESCRIPTION })),
    tier: t.Optional(t.String({ minLength: 1 })),
    expires_in_days: nullable('expires_in_days', 'Days from now; null: never expires'),
    rpm: nullable('rpm', 'null: use the tier value'),
    tpm: nullable('tpm', 'null: use the tier value'),
    max_concurrent: nullable('max_concurrent', 'null: use the tier value'),
    monthly_token_quota: nullable('monthly_token_quota', 'null: use the tier value'),
    daily_request_quota: nullable('daily_request_quota', 'null: use the tier value'),
    daily_budget_usd: t.Optional(t.Union([Budget('daily_budget_usd', 'null: use the tier value'), t.Null()], { error: budgetError('daily_budget_usd') })),
    monthly_budget_usd: t.Optional(t.Union([Budget('monthly_budget_usd', 'null: use the tier value'), t.Null()], { error: budgetError('monthly_budget_usd') })),
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
  daily_budget_usd?: number | null
  monthly_budget_usd?: number | null
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
    dailyBudgetNanos: nanosOrNull(body.daily_budget_usd),
    monthlyBudgetNanos: nanosOrNull(body.monthly_budget_usd),
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
