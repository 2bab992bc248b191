import { configHealth, type ConfigHealth } from './gateway-config'
import type { Gateway } from './gateway'

const HEALTH_TIMEOUT_MS = 1000

/** `ping`, or a rejection once HEALTH_TIMEOUT_MS passed; the timer is cleared either way, so a probe leaves nothing behind. */
function withinTimeout(ping: Promise<void>): Promise<void> {
  let timer: Timer | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${HEALTH_TIMEOUT_MS} ms`)), HEALTH_TIMEOUT_MS)
  })
  return Promise.race([ping, timeout]).finally(() => clearTimeout(timer))
}

export interface Health {
  ok: boolean
  database: string
  /** "in memory", or Redis's state when several instances share limits. */
  limiter: string
  /** "ok", or "unavailable: <reason>" while usage cannot be made durable (requests are then refused). */
  usage: string
  /** The config in force and this instance's own file: a drift is reported, never a reason for 503. */
  config: ConfigHealth
}

/**
 * What /health reports. Not ok (503) when requests cannot be served: Redis away (every request
 * needs it), or a SQLite database that cannot be used. Postgres away is reported but stays ok: known
 * keys are still served and usage waits in Redis, so a load balancer should keep sending traffic.
 */
export async function checkHealth(gateway: Gateway): Promise<Health> {
  // A database that does not answer within a second is reported as such: a balancer's check must not hang.
  const state = (ping: Promise<void>) =>
    withinTimeout(ping).then(
      () => 'ok',
      (error: unknown) => `unavailable: ${(error as Error).message}`,
    )
  const [database, limiter] = await Promise.all([state(gateway.stores.ping()), gateway.shared ? state(gateway.shared.ping()) : 'in memory'])
  const databaseDown = database !== 'ok' && (gateway.stores.backend === 'sqlite' || gateway.shared === null)
  const usageFailure = gateway.serving.usage.unavailable
  const usage = usageFailure === null ? 'ok' : `unavailable: ${usageFailure}`
  return { ok: !databaseDown && !limiter.startsWith('unavailable') && usageFailure === null, database, limiter, usage, config: configHealth(gateway) }
}
