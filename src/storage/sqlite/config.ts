import { and, count, eq, inArray, isNull, notInArray, sql } from 'drizzle-orm'
import { aliasTargets, aliases, apiKeys, configState, tiers, upstreams } from '../../../db/schema'
import { type ConfigStore, type GatewayConfig, settingsOf, type StoredConfig } from '../../config/types'
import { aliasOptions, storedRoutingOf, storedSettingsOf, tierInUse, unnamed, upstreamRow } from '../config-sync'
import { type Db, type DbOrTx, screenedVersion } from './open'

/**
 * Writes the config's tiers, upstreams and aliases into the database in one transaction: the file
 * is authoritative, so entries it names are replaced and entries it stopped naming are removed.
 * Keys and usage are never touched, and a tier that keys still use is never removed: the whole
 * sync is refused instead (400 naming the tier and how many keys use it), and nothing changes.
 * The config version goes up in the same transaction.
 */
function syncConfig(tx: DbOrTx, config: GatewayConfig, now: number): void {
  const droppedTiers = unnamed(
    config.tiers.map((t) => t.name),
    tx.select({ name: tiers.name }).from(tiers).all(),
  )
  if (droppedTiers.length > 0) {
    const inUse = tx
      .select({ tier: apiKeys.tier, keys: count() })
      .from(apiKeys)
      .where(and(inArray(apiKeys.tier, droppedTiers), isNull(apiKeys.revokedAt)))
      .groupBy(apiKeys.tier)
      .orderBy(apiKeys.tier)
      .all()
    const first = inUse[0]
    if (first) throw tierInUse(config, first.tier, first.keys)
    tx.delete(tiers).where(inArray(tiers.name, droppedTiers)).run()
  }
  tx.delete(upstreams)
    .where(
      notInArray(
        upstreams.name,
        config.upstreams.map((u) => u.name),
      ),
    )
    .run()
  // Their targets go with them (ON DELETE CASCADE).
  tx.delete(aliases)
    .where(
      notInArray(
        aliases.name,
        config.aliases.map((a) => a.name),
      ),
    )
    .run()

  config.tiers.forEach((tier, position) => {
    const row = { ...tier, position }
    tx.insert(tiers).values(row).onConflictDoUpdate({ target: tiers.name, set: row }).run()
  })
  for (const upstream of config.upstreams) {
    const row = upstreamRow(upstream)
    tx.insert(upstreams).values(row).onConflictDoUpdate({ target: upstreams.name, set: row }).run()
  }
  config.aliases.forEach((alias, position) => {
    tx.insert(aliases)
      .values({ name: alias.name, position, strategy: alias.strategy, createdAt: now, options: aliasOptions(alias) })
      .onConflictDoUpdate({ target: aliases.name, set: { position, strategy: alias.strategy, options: aliasOptions(alias) } })
      .run()
    tx.delete(aliasTargets).where(eq(aliasTargets.alias, alias.name)).run()
    alias.targets.forEach((target, i) =>
      tx
        .insert(aliasTargets)
        .values({ alias: alias.name, position: i, ...target })
        .run(),
    )
  })
  const settings = settingsOf(config, now)
  tx.insert(configState)
    .values({ id: 1, version: 1, settings })
    .onConflictDoUpdate({ target: configState.id, set: { version: sql`${configState.version} + 1`, settings } })
    .run()
}

/** Everything routing needs, read once (at start or reload) so requests never touch the database for it. */
function readStoredConfig(db: DbOrTx): StoredConfig | null {
  const state = db.select().from(configState).where(eq(configState.id, 1)).get()
  if (!state?.settings) return null
  return {
    routing: storedRoutingOf({
      tiers: db.select().from(tiers).all(),
      upstreams: db.select().from(upstreams).all(),
      aliases: db.select().from(aliases).all(),
      targets: db.select().from(aliasTargets).all(),
    }),
    settings: storedSettingsOf(state.settings),
    version: state.version,
  }
}

/**
 * The config in the tiers, upstreams, aliases and alias_targets tables, with its version in
 * config_state. Reading the version is screened by SQLite's data_version, which changes only when
 * another connection commits: a watch costs one pragma while nobody writes.
 */
export class SqliteConfigStore implements ConfigStore {
  private readonly configVersion

  constructor(private readonly db: Db) {
    const readVersion = db.select({ version: configState.version }).from(configState).where(eq(configState.id, 1)).prepare()
    this.configVersion = screenedVersion(db, () => readVersion.get()?.version ?? 0)
  }

  async apply<T>(config: GatewayConfig, now: number, build: (stored: StoredConfig) => T): Promise<T> {
    // Immediate: it reads before it writes, and a deferred transaction would fail at once, not wait,
    // when another process (a second gateway starting) wrote meanwhile.
    let written = 0
    const built = this.db.transaction(
      (tx) => {
        syncConfig(tx, config, now)
        const stored = readStoredConfig(tx)!
        written = stored.version
        return build(stored)
      },
      { behavior: 'immediate' },
    )
    // This connection's own commit leaves data_version as it was: the version it wrote is noted here.
    this.configVersion.note(written)
    return built
  }

  async version(): Promise<number> {
    return this.configVersion.read()
  }

  async read(): Promise<StoredConfig | null> {
    return this.db.transaction((tx) => readStoredConfig(tx))
  }

  async isEmpty(): Promise<boolean> {
    return this.db.select({ name: tiers.name }).from(tiers).limit(1).all().length === 0
  }
}
