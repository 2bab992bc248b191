import pkg from '../package.json'
import { KeyCache } from './auth/key-cache'
import { KeyService } from './auth/key-service'
import type { GatewayEnv } from './config/env'
import { loadGatewayConfig } from './config/load'
import type { GatewayConfig, ModelPrice } from './config/types'
import { providerKinds } from './providers'
import { headerNames, type HeaderNames } from './http/headers'
import type { Limiter } from './limits/limiter'
import { MemoryLimiter } from './limits/memory'
import { RequestObserver } from './observe/observer'
import type { Logger } from './log'
import { GatewayMetrics } from './observe/metrics'
import { CircuitBreakers } from './routing/circuit'
import { targetKey } from './routing/circuit'
import { buildRoutingTable, type RoutingTable } from './routing/table'
import type { ServeDeps } from './serve/serve'
import { openSqliteStores } from './storage/sqlite'
import type { Stores } from './storage/types'
import { builtInPrices } from './spend/price-table'
import { DAY_MS } from './time'
import { UsageJournal } from './usage/journal'
import { UsageRecorder } from './usage/recorder'
import { UsageReports } from './usage/reports'

export const VERSION: string = pkg.version

/** Everything a route needs, built once at start and handed to every route factory. */
export interface Gateway {
  env: GatewayEnv
  /** Where state is kept, behind its ports: never a raw database handle. */
  stores: Stores
  config: GatewayConfig
  /** Swapped whole, never mutated: a request keeps the table it started with. */
  routing: RoutingTable
  /** The built-in price table (src/spend/price-table.json), checked at start. */
  prices: ReadonlyMap<string, ModelPrice>
  /** Every key by hash, for authentication. */
  keyCache: KeyCache
  /** Creates, changes and revokes keys, keeping keyCache current. */
  keys: KeyService
  limiter: Limiter
  circuits: CircuitBreakers
  /** Usage, write side. */
  usage: UsageRecorder
  /** Usage, read side: reports and series, everything recorded so far included. */
  reports: UsageReports
  headers: HeaderNames
  log: Logger
  metrics: GatewayMetrics
  /** Writes each request's log line and metrics. */
  observer: RequestObserver
  /** The part of all this that serving a request uses. */
  serving: ServeDeps
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
 * Writes the config into the store and builds the routing table from the result, in one
 * transaction: if the table cannot be built, the store is left as it was.
 */
async function applyConfig(
  stores: Stores,
  config: GatewayConfig,
  env: GatewayEnv,
  prices: ReadonlyMap<string, ModelPrice>,
  log: Logger,
  now: number,
): Promise<RoutingTable> {
  const routing = await stores.config.apply(config, now, (stored) =>
    buildRoutingTable(
      stored,
      config.routing.deadlineMs,
      { env: env.vars, bounds: { maxSseEventChars: env.maxSseEventBytes, maxBodyBytes: env.maxUpstreamBodyBytes } },
      prices,
    ),
  )
  warnUnpriced(routing, log)
  return routing
}

/** Names every target without a price: its spend is counted as 0 and keys with a budget skip it. */
function warnUnpriced(routing: RoutingTable, log: Logger): void {
  const unpriced = new Set<string>()
  for (const alias of routing.aliases.values()) for (const target of alias.targets) if (target.price === null) unpriced.add(targetKey(target))
  for (const target of unpriced) {
    log.warn(
      { target },
      `no price for "${target}": its cost is counted as 0 and keys with a budget skip it; add [prices."<model>"] or a target price to the config`,
    )
  }
}

/**
 * Re-reads the config file and swaps routing atomically: requests in flight finish on the table
 * they started with. A bad file throws a GatewayError naming the field, and nothing changes.
 */
export async function reloadConfig(gateway: Gateway): Promise<{ source: string; tiers: number; upstreams: number; aliases: number }> {
  const config = loadGatewayConfig(gateway.env.configPath, providerKinds)
  const routing = await applyConfig(gateway.stores, config, gateway.env, gateway.prices, gateway.log, gateway.now())
  gateway.config = config
  gateway.routing = routing
  gateway.circuits.retain(new Set([...routing.aliases.values()].flatMap((alias) => alias.targets.map(targetKey))))
  const result = { source: config.source, tiers: routing.tiers.size, upstreams: routing.upstreams.length, aliases: routing.aliases.size }
  gateway.log.info(result, 'config reloaded')
  return result
}

/** Opens the stores, applies the config and builds the in-memory routing and key tables. */
export async function createGateway({ env, log, now = Date.now }: GatewayOptions): Promise<Gateway> {
  const config = loadGatewayConfig(env.configPath, providerKinds)
  const prices = builtInPrices()
  const stores = openSqliteStores(env.dbPath)
  try {
    const routing = await applyConfig(stores, config, env, prices, log, now())
    const circuits = new CircuitBreakers((target, failures) => log.warn({ target, failures }, 'circuit opened: target skipped until its cooldown ends'))
    // Scrapes read the routing table in force at that moment, whatever reloads happened since start.
    const metrics = new GatewayMetrics({ routing: () => gateway.routing, circuits, now })
    const keyCache = await KeyCache.load(stores.keys, () => metrics.keyCacheReloads.inc())
    const journal = stores.journalBase === null ? null : UsageJournal.create(stores.journalBase)
    const usage = await UsageRecorder.open(stores.usage, journal, stores.journalBase)
    const observer = new RequestObserver(log, metrics, env.logBodies && env.logLevel === 'debug')
    const limiter = new MemoryLimiter(stores.quotaBaseline)
    const headers = headerNames(env.headerBrand)
    const gateway: Gateway = {
      env,
      stores,
      config,
      routing,
      prices,
      keyCache,
      keys: new KeyService(stores.keys, keyCache, now),
      limiter,
      circuits,
      usage,
      reports: new UsageReports(stores.usageReads, () => usage.fold()),
      headers,
      log,
      metrics,
      observer,
      serving: { routing: () => gateway.routing, limiter, usage, circuits, now, headers, metrics, log, observer },
      now,
      holdConnection: () => {},
    }
    return gateway
  } catch (error) {
    stores.close()
    throw error
  }
}

/** Stops background work, folds the last usage, and closes the stores. */
export async function closeGateway(gateway: Gateway): Promise<void> {
  gateway.keyCache.stop()
  await gateway.usage.stop()
  gateway.stores.close()
}

/** When the store has no key at all, creates one on the first tier so that the first request works. */
export async function ensureFirstKey(gateway: Gateway): Promise<string | null> {
  if (gateway.keyCache.size > 0 || gateway.routing.firstTier === null) return null
  return (await gateway.keys.createFirst({ name: 'first key', tier: gateway.routing.firstTier }))?.key ?? null
}

/** Prunes minute rollups past the configured retention now and every 10 minutes; returns a stop function. */
export function startRollupPruning(gateway: Gateway, intervalMs = 600_000): () => void {
  const prune = () =>
    gateway.stores.usage.pruneMinutes(gateway.now() - gateway.config.usage.minuteRetentionDays * DAY_MS).then(
      (removed) => {
        if (removed > 0) gateway.log.debug({ removed }, 'pruned minute rollups')
      },
      (error: unknown) => gateway.log.error({ err: error }, 'pruning minute rollups failed; retried in 10 minutes'),
    )
  void prune()
  const timer = setInterval(() => void prune(), intervalMs)
  timer.unref()
  return () => clearInterval(timer)
}
