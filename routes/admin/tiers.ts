import { Elysia, t } from 'elysia'
import { ADMIN_SECURITY, adminAuth, defineAdminRoute } from '../../src/http/admin'
import { ErrorSchema, Int } from '../../src/http/schemas'
import { usdOrNull } from '../../src/spend/price'

const Quota = t.Union([Int(), t.Null()])
const TierSchema = t.Object({
  name: t.String(),
  requests_per_minute: Int(),
  tokens_per_minute: Int(),
  max_concurrent: Int(),
  daily_request_quota: Quota,
  monthly_token_quota: Quota,
  daily_budget_usd: t.Union([t.Number(), t.Null()]),
  monthly_budget_usd: t.Union([t.Number(), t.Null()]),
  models: t.Union([t.Array(t.String()), t.Null()]),
})

export default defineAdminRoute((gateway) =>
  new Elysia().use(adminAuth(gateway)).get(
    '',
    () => ({
      data: [...gateway.routing.tiers.values()].map((tier) => ({
        name: tier.name,
        requests_per_minute: tier.requestsPerMinute,
        tokens_per_minute: tier.tokensPerMinute,
        max_concurrent: tier.maxConcurrent,
        daily_request_quota: tier.dailyRequestQuota,
        monthly_token_quota: tier.monthlyTokenQuota,
        daily_budget_usd: usdOrNull(tier.dailyBudgetNanos),
        monthly_budget_usd: usdOrNull(tier.monthlyBudgetNanos),
        models: tier.models,
      })),
    }),
    {
      response: { 200: t.Object({ data: t.Array(TierSchema) }), 401: ErrorSchema, 429: ErrorSchema },
      detail: { tags: ['Admin'], summary: 'Tiers in force', security: ADMIN_SECURITY },
    },
  ),
)
