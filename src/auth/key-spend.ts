import type { RoutingTable } from '../routing/table'
import { usd } from '../spend/price'
import type { UsageReports } from '../usage/reports'
import type { KeyService } from './key-service'
import { keyView } from './keys'

/** Every key as the admin API lists it, with its spend today and this month beside the budgets in force. */
export async function keysWithSpend(gateway: { keys: KeyService; reports: UsageReports; routing: RoutingTable; now: () => number }) {
  const [keys, spend] = await Promise.all([gateway.keys.list(), gateway.reports.spendByKey(gateway.now())])
  return keys.map((record) => {
    const tier = gateway.routing.tiers.get(record.tier)
    const daily = record.dailyBudgetNanos ?? tier?.dailyBudgetNanos ?? null
    const monthly = record.monthlyBudgetNanos ?? tier?.monthlyBudgetNanos ?? null
    const spent = spend.get(record.id)
    return {
      ...keyView(record),
      spend_today_usd: usd(spent?.todayNanos ?? 0),
      spend_month_usd: usd(spent?.monthNanos ?? 0),
      daily_budget_in_force_usd: daily === null ? null : usd(daily),
      monthly_budget_in_force_usd: monthly === null ? null : usd(monthly),
    }
  })
}
