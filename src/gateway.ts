import { hostname } from 'node:os'
import { dirname, join } from 'node:path'
import pkg from '../package.json'
import { instanceSecret } from './auth/instance-secret'
import { KeyCache } from './auth/key-cache'
import { KeyService } from './auth/key-service'
import type { GatewayEnv } from './config/env'
import type { ConfigDifference } from './config/drift'
import { loadGatewayConfig } from './config/load'
import type { ConfigSettings, GatewayConfig, ModelPrice } from './config/types'
import { Conversations } from './conversations/conversations'
import { JournaledConversationStore } from './conversations/journaled'
import { ResponsesStore } from './conversations/responses'
import { type ConversationPipeline, type ConversationStore, isFoldable, NO_PIPELINE } from './conversations/store'
import { followConfig, writeConfig } from './gateway-config'
import { providerKinds } from './providers'
import { headerNames, type HeaderNames } from './http/headers'
import type { Limiter } from './limits/limiter'
import { MemoryLimiter } from './limits/memory'
import { RequestObserver } from './observe/observer'
import { atMostEvery, type Logger } from './log'
import { GatewayMetrics } from './observe/metrics'
import { RequestJournal } from './request-log/journal'
import { lostRecordWarning, RequestLog } from './request-log/log'
import { CircuitBreakers } from './routing/circuit'
import { UpstreamConnections } from './routing/connections'
import type { RoutingTable } from './routing/table'
import type { ServeDeps } from './serve/serve'
import { openCacheStore } from './storage/cache'
import { CacheKeys } from './cache/key'
import type { SharedLimits } from './storage/redis'
import { openSqliteStores } from './storage/sqlite'
import type { Stores } from './storage/types'
import { builtInPrices } from './spend/price-table'
import { DAY_MS } from './time'
import { UsageGate } from './usage/gate'
import { type ThinkingSigner, thinkingSigner } from './wire/anthropic/signature'
import { type ReasoningSealer, reasoningSealer } from './wire/pivot/sealed-reasoning'
import { UsageJournal } from './usage/journal'
import { foldOrphanJournals, type UsagePipeline, UsageRecorder } from './usage/recorder'
import { UsageReports } from './usage/reports'
import { TargetRouting } from './routing/target-routing'

export const VERSION: string = pkg.version

/** Everything a route needs, built once at start and handed to every route factory. */
export interface Gateway {
  env: GatewayEnv
  /** Where state is kept, behind its ports: never a raw database handle. */
  stores: Stores
  /** The settings of the config in force (its source, hash, deadline, rollup retention). */
  settings: ConfigSettings
  /** The stored config version the routing was built from. */
  configVersion: number
  /** This instance's own config file, as it last read it (at start or reload). */
  configFile: GatewayConfig
  /** Where this instance's file differs from the config in force (see gateway-config.ts); empty: in step. */
  configDrift: ConfigDifference[]
  /** Swapped whole, never mutated: a request keeps the table it started with. */
  routing: RoutingTable
  /** The built-in price table (src/spend/price-table.json), checked at start. */
  prices: ReadonlyMap<string, ModelPrice>
  /** Every key by hash, for authentication. */
  keyCache: KeyCache
  /** Anthropic message threads (and Responses API conversations) kept for their next turn, per key. */
  conversations: Conversations
  /** Stored Responses API responses: previous_response_id, GET, DELETE, input_items. */
  responses: ResponsesStore
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
  /** Signs thinking the gateway makes from another dialect's reasoning, and checks it when it comes back. */
  signer: ThinkingSigner
  /** Seals reasoning a caller must send back (the Responses API's encrypted_content). */
  sealer: ReasoningSealer
  /** The part of all this that serving a request uses. */
  serving: ServeDeps
  now: () => number
  /**
   * Exempts a request from the listener's idle timeout while it waits on an upstream (set by main
   * once it listens; a no-op in processes that do not).
   */
  holdConnection: (request: Request) => void
  /**
   * The client's address, for throttling failed admin authentications per address (set by main once
   * it listens: `server.requestIP`; null where nothing does, and then every client shares one allowance).
   */
  clientAddress: (request: Request) => string | null
}

export interface GatewayOptions {
  env: GatewayEnv
  log: Logger
  now?: () => number
}

export { reloadConfig } from './gateway-config'
export { startRollupPruning } from './gateway-pruning'

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

/** Where requests are admitted and their usage goes: in memory with this process's journal, or Redis shared by instances. */
interface Limits {
  limiter: Limiter
  usage: UsagePipeline
  shared: SharedLimits | null
  /** Whether usage can be made durable now: Redis answers (settles land there), or the journal takes a write. */
  probeUsage: () => Promise<void>
}

async function openLimits(env: GatewayEnv, stores: Stores, instanceId: string, log: Logger): Promise<Limits> {
  if (env.redisUrl !== null) {
    const { openSharedLimits } = await import('./storage/redis')
    const shared = await openSharedLimits({
      url: env.redisUrl,
      timeoutMs: env.redisTimeoutMs,
      instanceId,
      baseline: stores.quotaBaseline,
      usageStore: stores.usage,
      localBase: localBase(env, 'settles'),
      log,
    })
    try {
      // Usage a process journaled here before REDIS_URL was set (Postgres alone) is folded, not forgotten.
      await foldOrphanJournals(stores.usage, localBase(env, 'usage'))
    } catch (error) {
      await shared.close()
      throw error
    }
    return { limiter: shared.limiter, usage: shared.usage, shared, probeUsage: shared.ping }
  }
  const base = stores.journalBase ?? localBase(env, 'usage')
  const recorder = await UsageRecorder.open(stores.usage, base === null ? null : UsageJournal.create(base), base)
  return { limiter: new MemoryLimiter(stores.quotaBaseline, recorder), usage: recorder, shared: null, probeUsage: () => recorder.probe() }
}

/**
 * The conversation store every request uses. On a SQLite file, journaled: a put costs one `write()`
 * per event-loop turn, folded into the database every second or once 128 records (or 1 MiB of
 * them) wait (conversations/journaled.ts). On Postgres, written at once: the other instances of a
 * cluster must see a response at once.
 */
async function openConversations(stores: Stores): Promise<{ store: ConversationStore; pipeline: ConversationPipeline }> {
  const store = stores.conversations
  if (stores.backend !== 'sqlite' || stores.journalBase === null || !isFoldable(store)) return { store, pipeline: NO_PIPELINE }
  const journaled = await JournaledConversationStore.open(store, stores.journalBase)
  return { store: journaled, pipeline: journaled }
}

/** The request log, told of every finished request: a journal beside the database (in GATEWAY_DB's folder with Postgres), in a cluster Redis too. */
function openRequestLog(env: GatewayEnv, stores: Stores, shared: SharedLimits | null, observer: RequestObserver, log: Logger, gateway: () => Gateway) {
  const requestLog = new RequestLog({
    settings: () => gateway().configFile.requestLog,
    store: stores.requestLog,
    journal: RequestJournal.open(stores.journalBase ?? localBase(env, 'usage'), stores.requestLog),
    shared: shared?.requestLog ?? null,
    now: () => gateway().now(),
    onLost: lostRecordWarning(log),
  })
  observer.onFinish(requestLog.finished)
  return requestLog
}

/** Shut while usage cannot be made durable: says so when it shuts, and when it opens again. */
const usageGate = (probe: () => Promise<void>, log: Logger): UsageGate =>
  new UsageGate(probe, (failure) =>
    failure === null
      ? log.info('usage can be recorded again: serving resumes')
      : log.error({ reason: failure }, 'usage cannot be recorded: requests are refused with 503 usage_unavailable until it can'),
  )

/** Opens the stores, applies the config and builds the in-memory routing and key tables. */
export async function createGateway({ env, log, now = Date.now }: GatewayOptions): Promise<Gateway> {
  const config = loadGatewayConfig(env.configPath, providerKinds, env.vars)
  const prices = builtInPrices()
  // The pid first: Postgres cuts application names at 63 characters, and a long host name goes last.
  const instanceId = `${process.pid}-${crypto.randomUUID().slice(0, 6)}-${hostname()}`
  const stores = await openStores(env, instanceId)
  let shared: SharedLimits | null = null
  let conversationPipeline: ConversationPipeline = NO_PIPELINE
  try {
    const { stored, routing } = await writeConfig(stores.config, config, { env, prices, log, now: now(), why: 'start' })
    const circuits = new CircuitBreakers((target, failures) => log.warn({ target, failures }, 'circuit opened: target skipped until its cooldown ends'))
    // Scrapes read the routing table in force at that moment, whatever reloads happened since start.
    const connections = new UpstreamConnections(config.http.maxUpstreamConnections)
    const metrics = new GatewayMetrics({ routing: () => gateway.routing, circuits, connections, now })
    const keyCache = await KeyCache.load(stores.keys, () => metrics.keyCacheReloads.inc())
    const limits = await openLimits(env, stores, instanceId, log)
    shared = limits.shared
    const { limiter, usage } = limits
    const conversationStore = await openConversations(stores)
    conversationPipeline = conversationStore.pipeline
    const secret = instanceSecret(env, log)
    const observer = await RequestObserver.start(log, metrics, env.logBodies && env.logLevel === 'debug', env.vars, pkg.version)
    const headers = headerNames(env.headerBrand)
    const gateway: Gateway = {
      env,
      stores,
      settings: stored.settings,
      configVersion: stored.version,
      configFile: config,
      configDrift: [],
      routing,
      prices,
      keyCache,
      keys: new KeyService(stores.keys, keyCache, now),
      conversations: new Conversations(conversationStore.store, {
        ttlMs: () => gateway.configFile.conversations.responsesTtlDays * DAY_MS,
        now,
        pipeline: conversationStore.pipeline,
      }),
      responses: new ResponsesStore(conversationStore.store, { ttlMs: () => gateway.configFile.conversations.responsesTtlDays * DAY_MS, now }),
      limiter,
      shared,
      circuits,
      usage,
      reports: new UsageReports(stores.usageReads, () => usage.fold()),
      headers,
      log,
      metrics,
      observer,
      signer: thinkingSigner(secret),
      sealer: reasoningSealer(secret),
      serving: {
        routing: () => gateway.routing,
        limiter,
        circuits,
        connections,
        now,
        headers,
        metrics,
        log,
        observer,
        requestLog: openRequestLog(env, stores, shared, observer, log, () => gateway),
        cache: { store: await openCacheStore(env, config.cache, log, now()), keys: new CacheKeys(), settings: () => gateway.configFile.cache },
        targets: new TargetRouting(shared?.targets),
        usage: usageGate(limits.probeUsage, log),
      },
      now,
      holdConnection: () => {},
      clientAddress: () => null,
    }
    return gateway
  } catch (error) {
    await conversationPipeline.stop().catch(() => {})
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

/** Starts what runs in the background: the usage and conversation pipelines, and with Redis the lease renewals. */
export function startBackground(gateway: Gateway): void {
  gateway.shared?.limiter.start()
  // A database away for a while fails a fold every second: one line per 10 s says so, with the count.
  const foldFailed = (message: string) => {
    let failed = 0
    const mayLog = atMostEvery(10_000)
    return (error: unknown) => {
      failed++
      if (!mayLog()) return
      gateway.log.error({ reason: (error as Error).message, failed }, message)
      failed = 0
    }
  }
  gateway.usage.start(foldFailed('folding usage into the database failed; it waits (journal or Redis) and is retried every second'))
  gateway.conversations.pipeline.start(
    foldFailed('folding stored conversations into the database failed; they wait in the journal and are retried every second'),
  )
  gateway.serving.requestLog.start(foldFailed('folding the request log into the database failed; records wait (journal or Redis), retried every second'))
}

/** Stops background work, folds the last usage and conversations, and closes the stores. */
export async function closeGateway(gateway: Gateway): Promise<void> {
  try {
    await Promise.all([gateway.shared?.limiter.stop(), gateway.observer.stopTracing()])
    await gateway.usage.stop()
    await gateway.conversations.pipeline.stop()
    await gateway.serving.requestLog.stop()
  } finally {
    await gateway.shared?.close()
    await gateway.serving.cache?.store.close()
    await gateway.stores.close()
  }
}

/** When the store has no key at all, creates one on the first tier so that the first request works. */
export async function ensureFirstKey(gateway: Gateway): Promise<string | null> {
  if (gateway.keyCache.size > 0 || gateway.routing.firstTier === null) return null
  return (await gateway.keys.createFirst({ name: 'first key', tier: gateway.routing.firstTier }))?.key ?? null
}
