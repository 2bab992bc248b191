import { asc, eq } from 'drizzle-orm'
import { aliasTargets, aliases, tiers, upstreams } from '../../db/schema'
import type { DbOrTx } from '../db'
import type { AliasSettings, GatewayConfig, TierSettings, UpstreamSettings } from './file'

/**
 * Writes the config's tiers, upstreams and aliases into the database in one transaction. Entries
 * the config names are replaced; others, keys and usage are left alone.
 */
export function syncConfig(db: DbOrTx, config: GatewayConfig, now = Date.now()): void {
  db.transaction((tx) => {
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
  })
}

export interface StoredRouting {
  tiers: TierSettings[]
  upstreams: UpstreamSettings[]
  aliases: (AliasSettings & { createdAt: number })[]
}

/** Everything routing needs, read once (at start or reload) so requests never touch the database for it. */
export function readStoredRouting(db: DbOrTx): StoredRouting {
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
      targets: targetRows.filter((t) => t.alias === alias.name).map(({ upstream, model, weight }) => ({ upstream, model, weight })),
    })),
  }
}
