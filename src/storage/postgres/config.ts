import { and, count, eq, inArray, isNull, notInArray, sql } from 'drizzle-orm'
import { aliasTargets, aliases, apiKeys, configState, tiers, upstreams } from '../../../db/pg/schema'
import { type ConfigStore, type GatewayConfig, settingsOf, type StoredConfig } from '../../config/types'
import { aliasOptions, storedRoutingOf, storedSettingsOf, tierInUse, unnamed, upstreamRow } from '../config-sync'
import { CHANGES_CHANNEL, guarded, LOCK_CONFIG, LOCK_SPACE, type PgDb, type PgTx } from './open'

/**
 * Writes the config into the database (see SqliteConfigStore for the rules, which are the same), under
 * an advisory lock so instances starting or reloading together apply one config after the other.
 */
async function syncConfig(tx: PgTx, config: GatewayConfig, now: number): Promise<void> {
  await tx.execute(sql`SELECT pg_advisory_xact_lock(${LOCK_SPACE}, ${LOCK_CONFIG})`)
  const droppedTiers = unnamed(
    config.tiers.map((t) => t.name),
    await tx.select({ name: tiers.name }).from(tiers),
  )
  if (droppedTiers.length > 0) {
    const [first] = await tx
      .select({ tier: apiKeys.tier, keys: count() })
      .from(apiKeys)
      .where(and(inArray(apiKeys.tier, droppedTiers), isNull(apiKeys.revokedAt)))
      .groupBy(apiKeys.tier)
      .orderBy(apiKeys.tier)
      .limit(1)
    if (first) throw tierInUse(config, first.tier, first.keys)
    await tx.delete(tiers).where(inArray(tiers.name, droppedTiers))
  }
  await tx.delete(upstreams).where(
    notInArray(
      upstreams.name,
      config.upstreams.map((u) => u.name),
    ),
  )
  // Their targets go with them (ON DELETE CASCADE).
  await tx.delete(aliases).where(
    notInArray(
      aliases.name,
      config.aliases.map((a) => a.name),
    ),
  )
  for (const [position, tier] of config.tiers.entries()) {
    const row = { ...tier, position }
    await tx.insert(tiers).values(row).onConflictDoUpdate({ target: tiers.name, set: row })
  }
  for (const upstream of config.upstreams) {
    const row = upstreamRow(upstream)
    await tx.insert(upstreams).values(row).onConflictDoUpdate({ target: upstreams.name, set: row })
  }
  for (const [position, alias] of config.aliases.entries()) {
    await tx
      .insert(aliases)
      .values({ name: alias.name, position, strategy: alias.strategy, createdAt: now, options: aliasOptions(alias) })
      .onConflictDoUpdate({ target: aliases.name, set: { position, strategy: alias.strategy, options: aliasOptions(alias) } })
    await tx.delete(aliasTargets).where(eq(aliasTargets.alias, alias.name))
    if (alias.targets.length > 0) await tx.insert(aliasTargets).values(alias.targets.map((target, i) => ({ alias: alias.name, position: i, ...target })))
  }
  const settings = settingsOf(config, now)
  await tx
    .insert(configState)
    .values({ id: 1, version: 1, settings })
    .onConflictDoUpdate({ target: configState.id, set: { version: sql`${configState.version} + 1`, settings } })
  await tx.execute(sql`SELECT pg_notify(${CHANGES_CHANNEL}, 'config')`)
}

async function readStoredConfig(tx: PgTx | PgDb): Promise<StoredConfig | null> {
  const [state] = await tx.select().from(configState).where(eq(configState.id, 1))
  if (!state?.settings) return null
  const [tierRows, upstreamRows, aliasRows, targetRows] = [
    await tx.select().from(tiers),
    await tx.select().from(upstreams),
    await tx.select().from(aliases),
    await tx.select().from(aliasTargets),
  ]
  return {
    routing: storedRoutingOf({ tiers: tierRows, upstreams: upstreamRows, aliases: aliasRows, targets: targetRows }),
    settings: storedSettingsOf(state.settings),
    version: state.version,
  }
}

/** The config on Postgres, with its version in config_state. */
export class PgConfigStore implements ConfigStore {
  private readonly readVersion

  constructor(private readonly db: PgDb) {
    this.readVersion = db.select({ version: configState.version }).from(configState).where(eq(configState.id, 1)).prepare('config_version')
  }

  apply<T>(config: GatewayConfig, now: number, build: (stored: StoredConfig) => T): Promise<T> {
    return guarded(() =>
      this.db.transaction(async (tx) => {
        await syncConfig(tx, config, now)
        return build((await readStoredConfig(tx))!)
      }),
    )
  }

  version(): Promise<number> {
    return guarded(async () => (await this.readVersion.execute())[0]?.version ?? 0)
  }

  read(): Promise<StoredConfig | null> {
    // Repeatable read: the rows and the version are one snapshot, even while another instance writes.
    return guarded(() => this.db.transaction((tx) => readStoredConfig(tx), { isolationLevel: 'repeatable read' }))
  }

  isEmpty(): Promise<boolean> {
    return guarded(async () => (await this.db.select({ name: tiers.name }).from(tiers).limit(1)).length === 0)
  }
}
