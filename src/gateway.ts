import { hostname } from 'node:os'
import { dirname, join } from 'node:path'
import pkg from '../package.json'
import { KeyCache } from './auth/key-cache'
import { KeyService } from './auth/key-service'
import type { GatewayEnv } from './config/env'
import { loadGatewayConfig } from './config/load'
import type { ConfigSettings, GatewayConfig, ModelPrice, StoredConfig } from './config/types'
import { providerKinds } from './providers'
import { headerNames, type HeaderNames } from './http/headers'
import type { Limiter } from './limits/limiter'
import { MemoryLimiter } from './limits/memory'
import { RequestObserver } from './observe/observer'
import { atMostEvery, type Logger } from './log'
import { GatewayMetrics } from './observe/metrics'
import { CircuitBreakers } from './routing/circuit'
import { targetKey } from './routing/circuit'
import { UpstreamConnections } from './routing/connections'
import { buildRoutingTable, type RoutingTable } from './routing/table'
import type { ServeDeps } from './serve/serve'
import type { SharedLimits } from './storage/redis'
import { openSqliteStores } from './storage/sqlite'
import type { Stores } from './storage/types'
import { builtInPrices } from './spend/price-table'
import { DAY_MS } from './time'
import { UsageJournal } from './usage/journal'
import { foldOrphanJournals, type UsagePipeline, UsageRecorder } from './usage/recorder'
import { UsageReports } from './usage/reports'

export const VERSION: string = pkg.version

/** Everything a route needs, built once at start and handed to every route factory. */
export interface Gateway {
  env: GatewayEnv
  /** Where state is kept, behind its ports: never a raw database handle. */
  stores: Stores
  /** The settings of the config in force (its source, deadline, rollup retention). */
  settings: ConfigSettings
  /** The stored config version the routing was built from. */
  configVersion: number
  /** Swapped whole, never mutated: a request keeps the table it started with. */
  routing: RoutingTable
  /** The built-in price table (src/spend/price-table.json), checked at start. */
  prices: ReadonlyMap<string, ModelPrice>
  /** Every key by hash, for authentication. */
  keyCache: KeyCache
  /** Creates, changes and revokes keys, keeping keyCache current. */
  keys: KeyService
  /** Admits and settles requests: in memory (one process), or in Redis (several instances). */
  limiter: Limiter
  /** Redis, when several instances share limits through it; null: limits in memory. */
  shared: SharedLimits | null
  circuits: CircuitBreakers
  /** Moves recorded usage into the store: this process's journal, or the instances' shared usage stream. */
  usage: UsagePipeline
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

/** Builds the routing table from a stored config; names every unpriced target. */
function routingOf(stored: StoredConfig, env: GatewayEnv, prices: ReadonlyMap<string, ModelPrice>): RoutingTable {
  return buildRoutingTable(
    stored.routing,
    stored.settings.deadlineMs,
    { env: env.vars, bounds: { maxSseEventChars: env.maxSseEventBytes, maxBodyBytes: env.maxUpstreamBodyBytes } },
    prices,
  )
}

/**
 * Writes the config into the store and builds the routing table from the result, in one
 * transaction: if the table cannot be built, the store is left as it was.
 */
function applyConfig(stores: Stores, config: GatewayConfig, env: GatewayEnv, prices: ReadonlyMap<string, ModelPrice>, now: number) {
  return stores.config.apply(config, now, (stored) => ({ stored, routing: routingOf(stored, env, prices) }))
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

/** Puts a routing table in force: requests in flight finish on the one they started with. */
function useRouting(gateway: Gateway, stored: StoredConfig, routing: RoutingTable): void {
  gateway.settings = stored.settings
  gateway.configVersion = stored.version
  gateway.routing = routing
  gateway.circuits.retain(new Set([...routing.aliases.values()].flatMap((alias) => alias.targets.map(targetKey))))
}

/**
 * Re-reads the config file and swaps routing atomically: requests in flight finish on the table
 * they started with. A bad file throws a GatewayError naming the field, and nothing changes. Other
 * processes on the same database follow within a second (see watchStores).
 */
export async function reloadConfig(gateway: Gateway): Promise<{ source: string; tiers: number; upstreams: number; aliases: number }> {
  const config = loadGatewayConfig(gateway.env.configPath, providerKinds)
  const { stored, routing } = await applyConfig(gateway.stores, config, gateway.env, gateway.prices, gateway.now())
  warnUnpriced(routing, gateway.log)
  useRouting(gateway, stored, routing)
  const result = { source: config.source, tiers: routing.tiers.size, upstreams: routing.upstreams.length, aliases: routing.aliases.size }
  gateway.log.info(result, 'config reloaded')
  return result
}

/** Follows a config another process wrote (a reload elsewhere): rebuilds routing from the store when its version moved. */
async function followConfig(gateway: Gateway): Promise<void> {
  if ((await gateway.stores.config.version()) === gateway.configVersion) return
  const stored = await gateway.stores.config.read()
  // Only forward: a reload here may have installed a newer version while this read ran.
  if (stored === null || stored.version <= gateway.configVersion) return
  useRouting(gateway, stored, routingOf(stored, gateway.env, gateway.prices))
  gateway.log.info({ source: stored.settings.source, version: stored.version }, 'config changed by another process: routing rebuilt from the database')
}

/** Opens the database the environment names: Postgres with DATABASE_URL, else the SQLite file. */
export async function openStores(env: GatewayEnv, instanceId: string): Promise<Stores> {
  if (env.databaseUrl === null) return openSqliteStores(env.dbPath)
  // Loaded only when used: one instance on SQLite carries no Postgres driver in memory.
  const { openPostgresStores } = await import('./storage/postgres')
  return openPostgresStores(env.databaseUrl, { applicationName: `chatgate ${instanceId}`, poolSize: env.pgPoolSize })
}

/**
 * Where a process keeps journals of its own when the database is not a local file: GATEWAY_DB's
 * folder, one name per kind (usage waiting for Postgres, settles waiting for Redis), so a process of
 * one kind never takes the other kind's journals for its own.
 */
export const localBase = (env: GatewayEnv, kind: 'usage' | 'settles'): string | null =>
  env.dbPath === ':memory:' ? null : join(dirname(env.dbPath), kind === 'usage' ? 'chatgate' : 'chatgate-settles')

/** Opens the stores, applies the config and builds the in-memory routing and key tables. */
export async function createGateway({ env, log, now = Date.now }: GatewayOptions): Promise<Gateway> {
  const config = loadGatewayConfig(env.configPath, providerKinds)
  const prices = builtInPrices()
  // The pid first: Postgres cuts application names at 63 characters, and a long host name goes last.
  const instanceId = `${process.pid}-${crypto.randomUUID().slice(0, 6)}-${hostname()}`
  const stores = await openStores(env, instanceId)
  let shared: SharedLimits | null = null
  try {
    const { stored, routing } = await applyConfig(stores, config, env, prices, now())
    warnUnpriced(routing, log)
    const circuits = new CircuitBreakers((target, failures) => log.warn({ target, failures }, 'circuit opened: target skipped until its cooldown ends'))
    // Scrapes read the routing table in force at that moment, whatever reloads happened since start.
    const metrics = new GatewayMetrics({ routing: () => gateway.routing, circuits, now })
    const keyCache = await KeyCache.load(stores.keys, () => metrics.keyCacheReloads.inc())
    let limiter: Limiter
    let usage: UsagePipeline
    if (env.redisUrl !== null) {
      const { openSharedLimits } = await import('./storage/redis')
      shared = await openSharedLimits({
        url: env.redisUrl,
        timeoutMs: env.redisTimeoutMs,
        instanceId,
        baseline: stores.quotaBaseline,
        usageStore: stores.usage,
        localBase: localBase(env, 'settles'),
        log,
      })
      limiter = shared.limiter
      usage = shared.usage
      // Usage a process journaled here before REDIS_URL was set (Postgres alone) is folded, not forgotten.
      await foldOrphanJournals(stores.usage, localBase(env, 'usage'))
    } else {
      const base = stores.journalBase ?? localBase(env, 'usage')
      const recorder = await UsageRecorder.open(stores.usage, base === null ? null : UsageJournal.create(base), base)
      limiter = new MemoryLimiter(stores.quotaBaseline, recorder)
      usage = recorder
    }
    const observer = new RequestObserver(log, metrics, env.logBodies && env.logLevel === 'debug')
    const headers = headerNames(env.headerBrand)
    const gateway: Gateway = {
      env,
      stores,
      settings: stored.settings,
      configVersion: stored.version,
      routing,
      prices,
      keyCache,
      keys: new KeyService(stores.keys, keyCache, now),
      limiter,
      shared,
      circuits,
      usage,
      reports: new UsageReports(stores.usageReads, () => usage.fold()),
      headers,
      log,
      metrics,
      observer,
      serving: {
        routing: () => gateway.routing,
        limiter,
        circuits,
        connections: new UpstreamConnections(config.http.maxUpstreamConnections),
        now,
        headers,
        metrics,
        log,
        observer,
      },
      now,
      holdConnection: () => {},
    }
    return gateway
  } catch (error) {
    await shared?.close()
    await stores.close()
    throw error
  }
}

/**
 * Keeps this process in step with what other processes write to the shared database: keys (a
 * revocation) and the config (a reload). Announcements (Postgres NOTIFY) apply them at once; a poll
 * every `intervalMs` bounds the delay when an announcement is lost or the database has none.
 * Returns a stop function.
 */
export function watchStores(gateway: Gateway, intervalMs = 250): () => void {
  const { log } = gateway
  // An outage must not flood the log: one line a second at most.
  const mayLog = atMostEvery(1000)
  const failed = (what: string) => (error: unknown) => {
    if (!mayLog()) return
    log.error({ reason: (error as Error).message }, `reading ${what} changed by other processes failed; retried shortly`)
  }
  const keys = () => void gateway.keyCache.reloadIfChanged().catch(failed('keys'))
  let following: Promise<void> | null = null
  const config = () => {
    following ??= followConfig(gateway)
      .catch(failed('the config'))
      .finally(() => (following = null))
  }
  const timer = setInterval(() => {
    keys()
    config()
  }, intervalMs)
  timer.unref()
  if (gateway.env.pgListen && gateway.stores.changes) {
    gateway.stores.changes.listen((change) => (change === 'keys' ? keys() : config())).catch(failed('announcements'))
  }
  return () => clearInterval(timer)
}

/** Starts what runs in the background: the usage pipeline, and with Redis the lease renewals. */
export function startBackground(gateway: Gateway): void {
  gateway.shared?.limiter.start()
  // A database away for a while fails a fold every second: one line per 10 s says so, with the count.
  let failed = 0
  const mayLog = atMostEvery(10_000)
  gateway.usage.start((error) => {
    failed++
    if (!mayLog()) return
    gateway.log.error(
      { reason: (error as Error).message, failed },
      'folding usage into the database failed; it waits (journal or Redis) and is retried every second',
    )
    failed = 0
  })
}

/** Stops background work, folds the last usage, and closes the stores. */
export async function closeGateway(gateway: Gateway): Promise<void> {
  try {
    await gateway.shared?.limiter.stop()
    await gateway.usage.stop()
  } finally {
    await gateway.shared?.close()
    await gateway.stores.close()
  }
}

/** When the store has no key at all, creates one on the first tier so that the first request works. */
export async function ensureFirstKey(gateway: Gateway): Promise<string | null> {
  if (gateway.keyCache.size > 0 || gateway.routing.firstTier === null) return null
  return (await gateway.keys.createFirst({ name: 'first key', tier: gateway.routing.firstTier }))?.key ?? null
}

/** Prunes minute rollups past the configured retention now and every 10 minutes; returns a stop function. */
export function startRollupPruning(gateway: Gateway, intervalMs = 600_000): () => void {
  const prune = () =>
    gateway.stores.usage.pruneMinutes(gateway.now() - gateway.settings.minuteRetentionDays * DAY_MS).then(
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

const HEALTH_TIMEOUT_MS = 1000

export interface Health {
  ok: boolean
  database: string
  /** "in memory", or Redis's state when several instances share limits. */
  limiter: string
}

/**
 * What /health reports. Not ok (503) when requests cannot be served: Redis away (every request
 * needs it), or a SQLite database that cannot be used. Postgres away is reported but stays ok: known
 * keys are still served and usage waits in Redis, so a load balancer should keep sending traffic.
 */
export async function checkHealth(gateway: Gateway): Promise<Health> {
  // A database that does not answer within a second is reported as such: a balancer's check must not hang.
  const state = (ping: Promise<void>) =>
    Promise.race([ping, Bun.sleep(HEALTH_TIMEOUT_MS).then(() => Promise.reject(new Error(`no answer within ${HEALTH_TIMEOUT_MS} ms`)))]).then(
      () => 'ok',
      (error: unknown) => `unavailable: ${(error as Error).message}`,
    )
  const [database, limiter] = await Promise.all([state(gateway.stores.ping()), gateway.shared ? state(gateway.shared.ping()) : 'in memory'])
  const databaseDown = database !== 'ok' && (gateway.stores.backend === 'sqlite' || gateway.shared === null)
  return { ok: !databaseDown && !limiter.startsWith('unavailable'), database, limiter }
}
