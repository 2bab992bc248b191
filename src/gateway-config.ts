import type { GatewayEnv } from './config/env'
import { type ConfigDifference, configDifferences, describeDifference, describeDifferences } from './config/drift'
import { loadGatewayConfig } from './config/load'
import type { ConfigSettings, ConfigStore, GatewayConfig, ModelPrice, StoredConfig } from './config/types'
import type { Logger } from './log'
import { providerKinds } from './providers'
import { type CircuitBreakers, targetKey } from './routing/circuit'
import { buildRoutingTable, type RoutingTable } from './routing/table'

/**
 * The config in force, and this instance's own file beside it. Every instance on one database
 * serves the same config: the one the last instance to start or reload wrote. An instance whose
 * own file differs keeps serving the config in force, and says so (a warning naming the entries,
 * /health, GET /admin/config, the dashboard).
 */

/** The rule, as /admin/config states it. */
export const CONFIG_RULE =
  'The last instance to start or reload writes its config file as the config in force; every instance on the same database follows it within a second. An instance whose own file differs keeps serving the config in force and reports the differing entries.'

/** The part of the gateway the config lives in (the Gateway has all of it). */
export interface ConfigHolder {
  env: GatewayEnv
  stores: { config: ConfigStore }
  prices: ReadonlyMap<string, ModelPrice>
  log: Logger
  circuits: CircuitBreakers
  /** The settings of the config in force (its source, hash, deadline, rollup retention). */
  settings: ConfigSettings
  /** The stored config version the routing was built from. */
  configVersion: number
  /** Swapped whole, never mutated: a request keeps the table it started with. */
  routing: RoutingTable
  now: () => number
  /** This instance's own config file, as it last read it (at start or reload). */
  configFile: GatewayConfig
  /** Where this instance's file differs from the config in force (file → in force); empty: in step. */
  configDrift: ConfigDifference[]
}

/** Builds the routing table from a stored config; names every unpriced target. */
function routingOf(stored: StoredConfig, env: GatewayEnv, prices: ReadonlyMap<string, ModelPrice>): RoutingTable {
  return buildRoutingTable(
    stored.routing,
    stored.settings,
    { env: env.vars, bounds: { maxSseEventChars: env.maxSseEventBytes, maxBodyBytes: env.maxUpstreamBodyBytes } },
    prices,
  )
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

const short = (hash: string | null) => (hash === null ? 'unknown' : hash.slice(0, 12))

/**
 * Writes this instance's file as the config in force and builds the routing table from the result,
 * in one transaction: if the table cannot be built, the store is left as it was. When the config it
 * replaces came from another file, says what changed: every instance on the database follows it.
 */
export async function writeConfig(
  store: ConfigStore,
  config: GatewayConfig,
  context: { env: GatewayEnv; prices: ReadonlyMap<string, ModelPrice>; log: Logger; now: number; why: 'start' | 'reload' },
): Promise<{ stored: StoredConfig; routing: RoutingTable }> {
  const { env, prices, log, now, why } = context
  const before = await store.read()
  const applied = await store.apply(config, now, (stored) => ({ stored, routing: routingOf(stored, env, prices) }))
  warnUnpriced(applied.routing, log)
  const differences = before === null || before.settings.hash === config.hash ? [] : configDifferences(before, config)
  if (differences.length > 0) {
    // A start that replaces another file's config changes every instance's routing: a warning; a reload is asked for.
    log[why === 'start' ? 'warn' : 'info'](
      { version: applied.stored.version, hash: config.hash, replaced_hash: before!.settings.hash, changes: differences.map(describeDifference) },
      `this ${why} wrote ${config.source} (hash ${short(config.hash)}) as the config in force, replacing version ${before!.version} from ${before!.settings.source} (hash ${short(before!.settings.hash)}); every instance on this database follows it: ${describeDifferences(differences)}`,
    )
  }
  return applied
}

/** Puts a routing table in force: requests in flight finish on the one they started with. */
function useRouting(holder: ConfigHolder, stored: StoredConfig, routing: RoutingTable): void {
  holder.settings = stored.settings
  holder.configVersion = stored.version
  holder.routing = routing
  holder.circuits.retain(new Set([...routing.aliases.values()].flatMap((alias) => alias.targets.map(targetKey))))
}

/**
 * Re-reads the config file and swaps routing atomically: requests in flight finish on the table
 * they started with. A bad file throws a GatewayError naming the field, and nothing changes. Other
 * processes on the same database follow within a second (see followConfig).
 */
export async function reloadConfig(
  holder: ConfigHolder,
): Promise<{ source: string; hash: string; version: number; tiers: number; upstreams: number; aliases: number }> {
  const config = loadGatewayConfig(holder.env.configPath, providerKinds, holder.env.vars)
  const { stored, routing } = await writeConfig(holder.stores.config, config, {
    env: holder.env,
    prices: holder.prices,
    log: holder.log,
    now: holder.now(),
    why: 'reload',
  })
  useRouting(holder, stored, routing)
  holder.configFile = config
  holder.configDrift = []
  const result = {
    source: config.source,
    hash: config.hash,
    version: stored.version,
    tiers: routing.tiers.size,
    upstreams: routing.upstreams.length,
    aliases: routing.aliases.size,
  }
  holder.log.info(result, 'config reloaded')
  return result
}

/**
 * Follows a config another process wrote (a start or reload elsewhere): rebuilds routing from the
 * store when its version moved, and warns, naming the entries, when this instance's own file says
 * otherwise.
 */
export async function followConfig(holder: ConfigHolder): Promise<void> {
  if ((await holder.stores.config.version()) === holder.configVersion) return
  const stored = await holder.stores.config.read()
  // Only forward: a reload here may have installed a newer version while this read ran.
  if (stored === null || stored.version <= holder.configVersion) return
  useRouting(holder, stored, routingOf(stored, holder.env, holder.prices))
  const { log, configFile } = holder
  log.info({ source: stored.settings.source, version: stored.version }, 'config changed by another process: routing rebuilt from the database')
  const drifted = holder.configDrift.length > 0
  holder.configDrift = stored.settings.hash === configFile.hash ? [] : configDifferences(configFile, stored)
  if (holder.configDrift.length > 0) {
    log.warn(
      { version: stored.version, hash: stored.settings.hash, file_hash: configFile.hash, differences: holder.configDrift.map(describeDifference) },
      `this instance's config file ${configFile.source} (hash ${short(configFile.hash)}) differs from the config in force (version ${stored.version}, written from ${stored.settings.source}, hash ${short(stored.settings.hash)}), which this instance now serves: ${describeDifferences(holder.configDrift)}. The last instance to start or reload wins; reload or restart with the same file everywhere`,
    )
  } else if (drifted) {
    log.info({ version: stored.version, hash: stored.settings.hash }, "this instance's config file matches the config in force again")
  }
}

export interface ConfigHealth {
  /** The version of the config in force, and the hash of the file that wrote it (null: written before hashes were kept). */
  version: number
  hash: string | null
  /** This instance's own file. */
  file_hash: string
  /** Whether this instance's file says what the config in force says. */
  in_sync: boolean
  /** How many entries differ (named in GET /admin/config and in this instance's log). */
  differences: number
}

/** What /health (no key) shows: hashes and a count, never the entries themselves. */
export const configHealth = (holder: ConfigHolder): ConfigHealth => ({
  version: holder.configVersion,
  hash: holder.settings.hash,
  file_hash: holder.configFile.hash,
  in_sync: holder.configDrift.length === 0,
  differences: holder.configDrift.length,
})

/** The config in force and this instance's file, as GET /admin/config shows them. */
export function configStatus(holder: ConfigHolder) {
  const { settings, configFile, configDrift } = holder
  return {
    in_force: {
      version: holder.configVersion,
      hash: settings.hash,
      source: settings.source,
      written_at: settings.writtenAt === null ? null : new Date(settings.writtenAt).toISOString(),
    },
    file: { source: configFile.source, hash: configFile.hash },
    in_sync: configDrift.length === 0,
    differences: configDrift.map((difference) => ({ ...difference, text: describeDifference(difference) })),
    rule: CONFIG_RULE,
  }
}
