import pkg from '../package.json'
import { KeyCache } from './auth/key-cache'
import { createApiKey } from './auth/keys'
import type { GatewayEnv } from './config/env'
import { type GatewayConfig, loadGatewayConfig } from './config/file'
import { readStoredRouting, syncConfig } from './config/sync'
import { openStorage, type Storage } from './db'
import { headerNames, type HeaderNames } from './http/headers'
import { type Limiter, MemoryLimiter } from './limits/limiter'
import { RequestObserver } from './http/observer'
import type { Logger } from './log'
import { GatewayMetrics } from './metrics'
import { CircuitBreakers } from './routing/circuit'
import { buildRoutingTable, type RoutingTable } from './routing/table'
import { UsageRecorder, usageBaseline } from './usage/recorder'

export const VERSION: string = pkg.version

/** Everything a route needs, built once at start and handed to every route factory. */
export interface Gateway {
  env: GatewayEnv
  storage: Storage
  config: GatewayConfig
  /** Swapped whole, never mutated: a request keeps the table it started with. */
  routing: RoutingTable
  keys: KeyCache
  limiter: Limiter
  circuits: CircuitBreakers
  usage: UsageRecorder
  headers: HeaderNames
  log: Logger
  metrics: GatewayMetrics
  /** Writes each request's log line and metrics. */
  observer: RequestObserver
  now: () => number
}

export interface GatewayOptions {
  env: GatewayEnv
  log: Logger
  now?: () => number
}

/** Opens the database, applies the config and builds the in-memory routing and key tables. */
export function createGateway({ env, log, now = Date.now }: GatewayOptions): Gateway {
  const config = loadGatewayConfig(env.configPath)
  const storage = openStorage(env.dbPath)
  try {
    syncConfig(storage.db, config, now())
    const routing = buildRoutingTable(readStoredRouting(storage.db), config.routing.deadlineMs, env.vars)
    const circuits = new CircuitBreakers((target, failures) => log.warn({ target, failures }, 'circuit opened: target skipped until its cooldown ends'))
    // Scrapes read the routing table in force at that moment, whatever reloads happened since start.
    const metrics = new GatewayMetrics({ routing: () => gateway.routing, circuits, now })
    const gateway: Gateway = {
      env,
      storage,
      config,
      routing,
      keys: new KeyCache(storage.sqlite, storage.db),
      limiter: new MemoryLimiter(usageBaseline(storage.db)),
      circuits,
      usage: new UsageRecorder(storage.db),
      headers: headerNames(env.headerBrand),
      log,
      metrics,
      observer: new RequestObserver(log, metrics, env.logBodies && env.logLevel === 'debug'),
      now,
    }
    return gateway
  } catch (error) {
    storage.close()
    throw error
  }
}

/** When the database has no key at all, creates one on the first tier so that the first request works. */
export function ensureFirstKey(gateway: Gateway): string | null {
  if (gateway.keys.size > 0 || gateway.routing.firstTier === null) return null
  const { key } = createApiKey(gateway.storage.db, { name: 'first key', tier: gateway.routing.firstTier }, gateway.now())
  gateway.keys.reload()
  return key
}
