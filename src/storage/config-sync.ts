import {
  ALIAS_OPTION_DEFAULTS,
  type AliasOptions,
  type AliasSettings,
  type ConfigSettings,
  type GatewayConfig,
  type ModelPrice,
  type StoredRouting,
  type TierSettings,
  UPSTREAM_COLUMNS,
  type UpstreamSettings,
} from '../config/types'
import { invalidRequest } from '../errors'

/**
 * What the SQLite and Postgres config stores share: the rules of a config sync, written once. Each
 * store runs them inside its own transaction with its own driver.
 */

/** Stored names that the config no longer lists. */
export const unnamed = (named: string[], stored: { name: string }[]): string[] => stored.map((row) => row.name).filter((name) => !named.includes(name))

/** The refusal of a sync that would drop a tier keys still use: nothing is written. */
export function tierInUse(config: GatewayConfig, tier: string, keys: number) {
  const them = keys === 1 ? 'it' : 'them'
  return invalidRequest(
    `Invalid config (${config.source}): tiers."${tier}": the file no longer names this tier, but ${keys} key${keys === 1 ? ' uses' : 's use'} it. Move ${them} to another tier (PATCH /admin/keys/{id}) or revoke ${them}, or keep the tier in the file.`,
    { code: 'tier_in_use', param: `tiers.${tier}` },
  )
}

/** An upstream as a row: the settings that have columns, and every other one in `options`. */
export type UpstreamRow = Pick<UpstreamSettings, (typeof UPSTREAM_COLUMNS)[number]> & { options: Record<string, unknown> | null }

export function upstreamRow(upstream: UpstreamSettings): UpstreamRow {
  const row: Record<string, unknown> = {}
  const options: Record<string, unknown> = {}
  const columns: readonly string[] = UPSTREAM_COLUMNS
  for (const [field, value] of Object.entries(upstream)) (columns.includes(field) ? row : options)[field] = value
  return { ...(row as Omit<UpstreamRow, 'options'>), options }
}

/** Defaults of the settings that rows written by earlier versions do not hold. */
const UPSTREAM_OPTION_DEFAULTS: Omit<UpstreamSettings, (typeof UPSTREAM_COLUMNS)[number]> = {
  maxReasoningEffort: 'high',
  midSystem: 'keep',
  responses: 'translate',
}

const upstreamOf = ({ options, ...columns }: UpstreamRow): UpstreamSettings => ({ ...UPSTREAM_OPTION_DEFAULTS, ...options, ...columns })

/** The settings as rows written by earlier versions hold them: later fields may be missing. */
type SettingsRow = Omit<ConfigSettings, 'drainMs' | 'hash' | 'writtenAt'> & Partial<Pick<ConfigSettings, 'drainMs' | 'hash' | 'writtenAt'>>

/** Stored settings, with the defaults of fields that settings written by earlier versions do not hold (no hash: unknown). */
export const storedSettingsOf = (settings: SettingsRow): ConfigSettings => ({ drainMs: 10_000, hash: null, writtenAt: null, ...settings })

/** The rows of a config, as both schemas name them. */
export interface ConfigRows {
  tiers: (TierSettings & { position: number })[]
  upstreams: UpstreamRow[]
  aliases: { name: string; position: number; strategy: string; createdAt: number; options: Record<string, unknown> | null }[]
  targets: { alias: string; position: number; upstream: string; model: string; weight: number; price: ModelPrice | null }[]
}

/** Binary order of names, as both databases sort text by default here. */
const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

/** The config's rows in order: tiers by position, every alias's targets in order. */
export function storedRoutingOf(rows: ConfigRows): StoredRouting {
  const byPosition = (a: { position: number; name: string }, b: { position: number; name: string }) => a.position - b.position || byName(a, b)
  const targets = new Map<string, ConfigRows['targets']>()
  for (const target of rows.targets) {
    let list = targets.get(target.alias)
    if (!list) targets.set(target.alias, (list = []))
    list.push(target)
  }
  return {
    tiers: [...rows.tiers].sort(byPosition).map(({ position: _, ...tier }) => tier),
    upstreams: [...rows.upstreams].sort(byName).map(upstreamOf),
    aliases: [...rows.aliases].sort(byPosition).map((alias) => ({
      ...ALIAS_OPTION_DEFAULTS,
      ...alias.options,
      name: alias.name,
      strategy: alias.strategy as AliasSettings['strategy'],
      createdAt: alias.createdAt,
      targets: (targets.get(alias.name) ?? [])
        .sort((a, b) => a.position - b.position)
        .map(({ upstream, model, weight, price }) => ({ upstream, model, weight, price: price ?? null })),
    })),
  }
}

/** An alias's settings beyond its name, strategy and targets, as its row keeps them. */
export const aliasOptions = ({ name: _, strategy: __, targets: ___, ...options }: AliasSettings): AliasOptions => options
