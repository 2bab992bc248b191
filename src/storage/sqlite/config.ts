import { and, asc, count, eq, inArray, isNull, notInArray } from 'drizzle-orm'
import { aliasTargets, aliases, apiKeys, tiers, upstreams } from '../../../db/schema'
import type { AliasSettings, ConfigStore, GatewayConfig, StoredRouting } from '../../config/types'
import { invalidRequest } from '../../errors'
import type { Db, DbOrTx } from './open'

/** Stored names that the config no longer lists. */
const unnamed = (named: string[], stored: { name: string }[]) => stored.map((row) => row.name).filter((name) => !named.includes(name))

/**
 * Writes the config's tiers, upstreams and aliases into the database in one transaction: the file
 * is authoritative, so entries it names are replaced and entries it stopped naming are removed.
 * Keys and usage are never touched, and a tier that keys still use is never removed: the whole
 * sync is refused instead (400 naming the tier and how many keys use it), and nothing changes.
 */
function syncConfig(db: DbOrTx, config: GatewayConfig, now: number): void {
  db.transaction(
    (tx) => {
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
        if (first) {
          throw invalidRequest(
            `Invalid config (${config.source}): tiers."${first.tier}": the file no longer names this tier, but ${first.keys} key${first.keys === 1 ? ' uses' : 's use'} it. Move ${first.keys === 1 ? 'it' : 'them'} to another tier (PATCH /admin/keys/{id}) or revoke ${first.keys === 1 ? 'it' : 'them'}, or keep the tier in the file.`,
            { code: 'tier_in_use', param: `tiers.${first.tier}` },
          )
        }
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
        tx.insert(upstreams).values(upstream).onConflictDoUpdate({ target: upstreams.name, set: upstream }).run()
      }
      config.aliases.forEach((alias, position) => {
        tx.insert(aliases)
          .values({ name: alias.name, position, strategy: alias.strategy, createdAt: now })
          .onConflictDoUpdate({ target: aliases.name, set: { position, strategy: alias.strategy } })
          .run()
        tx.delete(aliasTargets).where(eq(aliasTargets.alias, alias.name)).run()
        alias.targets.forEach((target, i) =>
          tx
            .insert(aliasTargets)
            .values({ alias: alias.name, position: i, ...target })
            .run(),
        )
      })
    },
    { behavior: 'immediate' },
  )
}

/** Everything routing needs, read once (at start or reload) so requests never touch the database for it. */
function readStoredRouting(db: DbOrTx): StoredRouting {
  const tierRows = db.select().from(tiers).orderBy(asc(tiers.position), asc(tiers.name)).all()
  const upstreamRows = db.select().from(upstreams).orderBy(asc(upstreams.name)).all()
  const aliasRows = db.select().from(aliases).orderBy(asc(aliases.position), asc(aliases.name)).all()
  const targetRows = db.select().from(aliasTargets).orderBy(asc(aliasTargets.alias), asc(aliasTargets.position)).all()
  return {
    tiers: tierRows.map(({ position: _, ...tier }) => tier),
    upstreams: upstreamRows,
    aliases: aliasRows.map((alias) => ({
      name: alias.name,
      strategy: alias.strategy as AliasSettings['strategy'],
      createdAt: alias.createdAt,
      targets: targetRows
        .filter((t) => t.alias === alias.name)
        .map(({ upstream, model, weight, price }) => ({ upstream, model, weight, price: price ?? null })),
    })),
  }
}

/** The config in the tiers, upstreams, aliases and alias_targets tables. */
export class SqliteConfigStore implements ConfigStore {
  constructor(private readonly db: Db) {}

  async apply<T>(config: GatewayConfig, now: number, build: (stored: StoredRouting) => T): Promise<T> {
    // Immediate: it reads before it writes, and a deferred transaction would fail at once, not wait,
    // when another process (a second gateway starting) wrote meanwhile.
    return this.db.transaction(
      (tx) => {
        syncConfig(tx, config, now)
        return build(readStoredRouting(tx))
      },
      { behavior: 'immediate' },
    )
  }

  async isEmpty(): Promise<boolean> {
    return this.db.select({ name: tiers.name }).from(tiers).limit(1).all().length === 0
  }
}
