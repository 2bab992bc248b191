import pkg from '../package.json'
import { KeyCache } from './auth/key-cache'
import { KeyService } from './auth/key-service'
import { KeyStore } from './auth/keys'
import type { GatewayEnv } from './config/env'
import { loadGatewayConfig } from './config/load'
import type { GatewayConfig } from './config/types'
import { providerKinds } from './providers'
import { readStoredRouting, syncConfig } from './config/sync'
import { openStorage, type Storage } from './db'
import { headerNames, type HeaderNames } from './http/headers'
import { type Limiter, MemoryLimiter } from './limits/limiter'
import { RequestObserver } from './observe/observer'
import type { Logger } from './log'
import { GatewayMetrics } from './observe/metrics'
import { CircuitBreakers } from './routing/circuit'
import { targetKey } from './routing/circuit'
import { buildRoutingTable, type RoutingTable } from './routing/table'
import { UsageRecorder, usageBaseline } from './usage/recorder'
import { UsageJournal } from './usage/journal'
import { pruneMinuteRollups } from './usage/rollups'

export const VERSION: string = pkg.version

/** Everything a route needs, built once at start and handed to every route factory. */
export interface Gateway {
  env: GatewayEnv
  storage: Storage
  config: GatewayConfig
  /** Swapped whole, never mutated: a request keeps the table it started with. */
  routing: RoutingTable
  /** Every key by hash, for authentication. */
  keyCache: KeyCache
  /** Creates, changes and revokes keys, keeping keyCache current. */
  keys: KeyService
  limiter: Limiter
  circuits: CircuitBreakers
  usage: UsageRecorder
  headers: HeaderNames
  log: Logger
  metrics: GatewayMetrics
  /** Writes each request's log line and metrics. */
  observer: RequestObserver
  now: () => number
  /**
   * Exempts a request from the listener's idle timeout while it waits on an upstream (set by main
   * once it listens; a no-op in processes that do not).
   */
  holdConnection: (request: Request) => void
}

export interface GatewayOptions {
  env: GatewayEnv
  log: Logger
  now?: () => number
}

/**
 * Writes the config into the database and builds the routing table from the result, in one
 * transaction: if the table cannot be built, the database is left as it was.
 */
function applyConfig(storage: Storage, config: GatewayConfig, env: GatewayEnv, now: number): RoutingTable {
  // Immediate: it reads before it writes, and a deferred transaction would fail at once, not wait,
  // when another process (a second gateway starting) wrote meanwhile.
  return storage.db.transaction(
    (tx) => {
      syncConfig(tx, config, now)
      return buildRoutingTable(readStoredRouting(tx), config.routing.deadlineMs, {
        env: env.vars,
        bounds: { maxSseEventChars: env.maxSseEventBytes, maxBodyBytes: env.maxUpstreamBodyBytes },
      })
    },
    { behavior: 'immediate' },
  )
}

/**
 * Re-reads the config file and swaps routing atomically: requests in flight finish on the table
 * they started with. A bad file throws a GatewayError naming the field, and nothing changes.
 */
export function reloadConfig(gateway: Gateway): { source: string; tiers: number; upstreams: number; aliases: number } {
  const config = loadGatewayConfig(gateway.env.configPath, providerKinds)
  const routing = applyConfig(gateway.storage, config, gateway.env, gateway.now())
  gateway.config = config
  gateway.routing = routing
  gateway.circuits.retain(new Set([...routing.aliases.values()].flatMap((alias) => alias.targets.map(targetKey))))
  const result = { source: config.source, tiers: routing.tiers.size, upstreams: routing.upstreams.length, aliases: routing.aliases.size }
  gateway.log.info(result, 'config reloaded')
  return result
}

/** Opens the database, applies the config and builds the in-memory routing and key tables. */
export function createGateway({ env, log, now = Date.now }: GatewayOptions): Gateway {
  const config = loadGatewayConfig(env.configPath, providerKinds)
  const storage = openStorage(env.dbPath)
  try {
    const routing = applyConfig(storage, config, env, now())
    const circuits = new CircuitBreakers((target, failures) => log.warn({ target, failures }, 'circuit opened: target skipped until its cooldown ends'))
    // Scrapes read the routing table in force at that moment, whatever reloads happened since start.
    const metrics = new GatewayMetrics({ routing: () => gateway.routing, circuits, now })
    const keyStore = new KeyStore(storage.db)
    const keyCache = new KeyCache(keyStore, () => metrics.keyCacheReloads.inc())
    const gateway: Gateway = {
      env,
      storage,
      config,
      routing,
      keyCache,
      keys: new KeyService(keyStore, keyCache, now),
      limiter: new MemoryLimiter(usageBaseline(storage.db)),
      circuits,
      usage: new UsageRecorder(storage.db, storage.path === null ? null : UsageJournal.create(storage.path), storage.path),
      headers: headerNames(env.headerBrand),
      log,
      metrics,
      observer: new RequestObserver(log, metrics, env.logBodies && env.logLevel === 'debug'),
      now,
      holdConnection: () => {},
    }
    return gateway
  } catch (error) {
    storage.close()
    throw error
  }
}

/** When the database has no key at all, creates one on the first tier so that the first request works. */
export function ensureFirstKey(gateway: Gateway): string | null {
  if (gateway.keyCache.size > 0 || gateway.routing.firstTier === null) return null
  return gateway.keys.createFirst({ name: 'first key', tier: gateway.routing.firstTier })?.key ?? null
}

/** Prunes minute rollups past the configured retention now and every 10 minutes; returns a stop function. */
export function startRollupPruning(gateway: Gateway, intervalMs = 600_000): () => void {
  const prune = () => {
    const removed = pruneMinuteRollups(gateway.storage.db, gateway.now(), gateway.config.usage.minuteRetentionDays)
    if (removed > 0) gateway.log.debug({ removed }, 'pruned minute rollups')
  }
  prune()
  const timer = setInterval(prune, intervalMs)
  timer.unref()
  return () => clearInterval(timer)
}
