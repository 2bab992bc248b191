import { type GatewayError, rateLimited } from '../errors'
import { formatUsd } from '../spend/price'
import type { KeyLimits, RefusalReason } from './limiter'

/** Which limit refused a request, in the detail both limiters decide on. */
export type LimitHit = 'quota_day' | 'quota_month' | 'budget_day' | 'budget_month' | 'requests' | 'tokens' | 'concurrency'

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000))
const refusal = (code: string, message: string, wait: number) => rateLimited(message, { code, retryAfterSeconds: wait })
const budgetExceeded = (period: string, budgetNanos: number, resets: string, wait: number) =>
  refusal('budget_exceeded', `${period} budget of $${formatUsd(budgetNanos)} spent. It resets ${resets}, in ${wait} s.`, wait)

/**
 * The 429 for a limit that was hit, with Retry-After in whole seconds rounded up (`waitMs`: until
 * the limit frees a request: the next period for quotas and budgets, the window for rates), and
 * the metric's reason. One wording for every limiter.
 */
export function refusalFor(hit: LimitHit, limits: KeyLimits, waitMs: number): { reason: RefusalReason; error: GatewayError } {
  const wait = seconds(waitMs)
  switch (hit) {
    case 'quota_day':
      return {
        reason: 'quota',
        error: refusal('quota_exceeded', `Daily request quota of ${limits.dailyRequestQuota} reached. It resets at 00:00 UTC, in ${wait} s.`, wait),
      }
    case 'quota_month':
      return {
        reason: 'quota',
        error: refusal('quota_exceeded', `Monthly token quota of ${limits.monthlyTokenQuota} reached. It resets on the 1st at 00:00 UTC, in ${wait} s.`, wait),
      }
    case 'budget_day':
      return { reason: 'budget', error: budgetExceeded('Daily', limits.dailyBudgetNanos!, 'at 00:00 UTC', wait) }
    case 'budget_month':
      return { reason: 'budget', error: budgetExceeded('Monthly', limits.monthlyBudgetNanos!, 'on the 1st at 00:00 UTC', wait) }
    case 'requests':
      return {
        reason: 'requests',
        error: refusal('rate_limit_exceeded', `Rate limit reached: ${limits.requestsPerMinute} requests per minute. Try again in ${wait} s.`, wait),
      }
    case 'tokens':
      return {
        reason: 'tokens',
        error: refusal('rate_limit_exceeded', `Token rate limit reached: ${limits.tokensPerMinute} tokens per minute. Try again in ${wait} s.`, wait),
      }
    case 'concurrency':
      return {
        reason: 'concurrency',
        error: refusal('concurrency_limit_exceeded', `Concurrency limit reached: ${limits.maxConcurrent} requests in flight.`, 1),
      }
  }
}
