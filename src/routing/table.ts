import type { ModelPrice, RoutingStrategy, TargetLimits, TierSettings, UpstreamSettings } from '../config/types'
import type { StoredRouting } from '../config/types'
import { internalError, notFound } from '../errors'
import { providerKinds } from '../providers'
import type { Provider, ProviderContext } from '../providers/types'

export interface Tier extends TierSettings {
  /** Whether this tier may use an alias (its `models` globs; none means all). */
  allows(alias: string): boolean
}

export interface Target {
  upstream: UpstreamSettings
  provider: Provider
  model: string
  weight: number
  /** What a token costs on this target; null: unpriced (keys with a budget skip it). */
  price: ModelPrice | null
  /** The provider account's rpm / tpm for this upstream and model, whichever alias set them; absent: none. */
  limits?: TargetLimits
  /** "upstream/model", made once (see targetKey). */
  key?: string
}

/** The mock costs nothing unless the config prices it. */
const FREE: ModelPrice = { input: 0, output: 0, cachedInput: 0, cacheWrite: 0 }

/** The OpenAI model record served by /v1/models. */
export interface ModelRecord {
  id: string
  object: 'model'
  created: number
  owned_by: string
}

export interface Alias {
  name: string
  strategy: RoutingStrategy
  targets: Target[]
  model: ModelRecord
  /** Hosted tools its targets cannot run: left out and named, or refused. */
  hostedTools: 'drop' | 'refuse'
}

/** An immutable snapshot of tiers, aliases and ready providers; swapped whole on reload. */
export interface RoutingTable {
  tiers: ReadonlyMap<string, Tier>
  /** The tier the first key gets: the first in config order. */
  firstTier: string | null
  aliases: ReadonlyMap<string, Alias>
  upstreams: UpstreamSettings[]
  /** Every upstream's provider by name: for calls that name an upstream, not an alias (a stored native response). */
  providers: ReadonlyMap<string, Provider>
  models: ModelRecord[]
  /** One request, all attempts together. */
  deadlineMs: number
  /** How long a stream whose caller left is still read for its usage. */
  drainMs: number
}

export function globToRegExp(glob: string): RegExp {
  const source = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replaceAll('*', '.*')
    .replaceAll('?', '.')
  return new RegExp(`^${source}$`)
}

/**
 * The in-memory routing table from the stored config. A target's price is its own or the config's
 * (stored with it), else the built-in table's for its model, else free for the mock, else none.
 */
export function buildRoutingTable(
  stored: StoredRouting,
  { deadlineMs, drainMs }: { deadlineMs: number; drainMs: number },
  context: ProviderContext,
  prices: ReadonlyMap<string, ModelPrice>,
): RoutingTable {
  const tiers = new Map<string, Tier>()
  for (const settings of stored.tiers) {
    const patterns = settings.models?.map(globToRegExp) ?? null
    tiers.set(settings.name, { ...settings, allows: (alias) => patterns === null || patterns.some((p) => p.test(alias)) })
  }

  const providers = new Map<string, { settings: UpstreamSettings; provider: Provider }>()
  for (const settings of stored.upstreams) {
    const kind = providerKinds.get(settings.kind)
    if (!kind) {
      throw internalError(`upstream "${settings.name}" in the database has kind "${settings.kind}", which this build does not implement`)
    }
    providers.set(settings.name, { settings, provider: kind.create(settings, context) })
  }

  const limits = accountLimits(stored.aliases)
  const aliases = new Map<string, Alias>()
  for (const stored_ of stored.aliases) {
    const targets = stored_.targets.map((target): Target => {
      const entry = providers.get(target.upstream)
      if (!entry) throw internalError(`alias "${stored_.name}" points at unknown upstream "${target.upstream}"`)
      const price = target.price ?? prices.get(target.model) ?? (entry.settings.kind === 'mock' ? FREE : null)
      const key = `${target.upstream}/${target.model}`
      const built: Target = { upstream: entry.settings, provider: entry.provider, model: target.model, weight: target.weight, price, key }
      const limit = limits.get(key)
      if (limit) built.limits = limit
      return built
    })
    const model: ModelRecord = {
      id: stored_.name,
      object: 'model',
      created: Math.floor(stored_.createdAt / 1000),
      owned_by: stored_.name.slice(0, stored_.name.indexOf('/')),
    }
    aliases.set(stored_.name, { name: stored_.name, strategy: stored_.strategy, targets, model, hostedTools: stored_.hostedTools })
  }

  return {
    tiers,
    firstTier: stored.tiers[0]?.name ?? null,
    aliases,
    upstreams: stored.upstreams,
    providers: new Map([...providers].map(([name, entry]) => [name, entry.provider])),
    models: [...aliases.values()].map((a) => a.model),
    deadlineMs,
    drainMs,
  }
}

/** Every upstream and model's account limits, from whichever alias's targets set them (the config made sure they agree). */
function accountLimits(aliases: StoredRouting['aliases']): Map<string, TargetLimits> {
  const limits = new Map<string, TargetLimits>()
  for (const alias of aliases) {
    alias.targetLimits?.forEach((limit, i) => {
      const target = alias.targets[i]
      if (target && (limit.rpm !== null || limit.tpm !== null)) limits.set(`${target.upstream}/${target.model}`, limit)
    })
  }
  return limits
}

export function resolveAlias(table: RoutingTable, name: string): Alias {
  const alias = table.aliases.get(name)
  if (!alias) {
    throw notFound(`The model "${name}" does not exist. GET /v1/models lists the available models.`, { code: 'model_not_found', param: 'model' })
  }
  return alias
}
