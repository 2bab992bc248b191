import type { RoutingTable } from '../routing/table'
import { usd, usdOrNull } from '../spend/price'
import { limitsOf } from './authenticate'
import type { UsageReports } from '../usage/reports'
import type { KeyService } from './key-service'
import type { KeyPageQuery } from './keys'
import { keyView } from './keys'

/**
 * One page of keys as the admin API lists them, each with its spend today and this month beside the
 * budgets in force, and today's requests and tokens. Usage is read for the page's keys only, so a
 * page costs the same however many keys there are.
 */
export async function keysWithSpend(gateway: { keys: KeyService; reports: UsageReports; routing: RoutingTable; now: () => number }, query: KeyPageQuery) {
  const page = await gateway.keys.page(query)
  const activity = await gateway.reports.spendByKey(
    gateway.now(),
    page.records.map((record) => record.id),
  )
  const data = page.records.map((record) => {
    const tier = gateway.routing.tiers.get(record.tier)
    // The budgets a request would be held to; a key whose tier is gone has only its own.
    const budgets = tier ? limitsOf(record, tier) : record
    const used = activity.get(record.id)
    return {
      ...keyView(record),
      spend_today_usd: usd(used?.todayNanos ?? 0),
      spend_month_usd: usd(used?.monthNanos ?? 0),
      daily_budget_in_force_usd: usdOrNull(budgets.dailyBudgetNanos),
      monthly_budget_in_force_usd: usdOrNull(budgets.monthlyBudgetNanos),
      requests_today: used?.requestsToday ?? 0,
      tokens_today: used?.tokensToday ?? 0,
    }
  })
  return { data, next_cursor: page.nextCursor }
}
