import type { RoutingTable } from '../routing/table'
import { usd, usdOrNull } from '../spend/price'
import { limitsOf } from './authenticate'
import type { UsageReports } from '../usage/reports'
import type { KeyService } from './key-service'
import { keyView } from './keys'

/** Every key as the admin API lists it, with its spend today and this month beside the budgets in force. */
export async function keysWithSpend(gateway: { keys: KeyService; reports: UsageReports; routing: RoutingTable; now: () => number }) {
  const [keys, spend] = await Promise.all([gateway.keys.list(), gateway.reports.spendByKey(gateway.now())])
  return keys.map((record) => {
    const tier = gateway.routing.tiers.get(record.tier)
    // The budgets a request would be held to; a key whose tier is gone has only its own.
    const budgets = tier ? limitsOf(record, tier) : record
    const spent = spend.get(record.id)
    return {
      ...keyView(record),
      spend_today_usd: usd(spent?.todayNanos ?? 0),
      spend_month_usd: usd(spent?.monthNanos ?? 0),
      daily_budget_in_force_usd: usdOrNull(budgets.dailyBudgetNanos),
      monthly_budget_in_force_usd: usdOrNull(budgets.monthlyBudgetNanos),
    }
  })
}
