import type { AliasSettings, ConfigSettings, GatewayConfig, StoredConfig, TierSettings, UpstreamSettings } from './types'

/**
 * Where two configs differ, entry by entry, named as the config file names them
 * (`tiers.free.requests_per_minute`, `aliases."openai/fast"`): what an operator compares when one
 * instance's file is not the config in force.
 */

export interface ConfigDifference {
  /** The entry, as the file names it. */
  entry: string
  change: 'added' | 'removed' | 'changed'
  /** The value on the `from` side (absent when added), as the file writes it (USD, snake_case). */
  from?: unknown
  /** The value on the `to` side (absent when removed). */
  to?: unknown
}

/** What both sides are compared on: the rows and settings a config puts in force. */
interface ConfigParts {
  tiers: TierSettings[]
  upstreams: UpstreamSettings[]
  aliases: AliasSettings[]
  settings: Pick<ConfigSettings, 'deadlineMs' | 'drainMs' | 'minuteRetentionDays'>
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

const snake = (field: string) => field.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`)

/** A settings object as the file writes it: snake_case, budgets in USD, prices in USD per million tokens. */
function asWritten(value: unknown, inPrice = false): Json | undefined {
  if (value === undefined) return undefined
  if (Array.isArray(value)) return value.map((item) => asWritten(item) ?? null)
  if (!isObject(value)) return inPrice && typeof value === 'number' ? value / 1e6 : (value as Json)
  const out: Record<string, Json> = {}
  for (const [field, item] of Object.entries(value)) {
    if (item === undefined) continue
    // Budgets are kept in nano-dollars, prices in micro-dollars per million tokens: shown as written.
    if (field.endsWith('Nanos')) out[snake(field.slice(0, -5)) + '_usd'] = typeof item === 'number' ? item / 1e9 : (item as Json)
    else out[snake(field)] = asWritten(item, inPrice || field === 'price') ?? null
  }
  return out
}

/** Named entries as one object by name, each without its name (it is the key). */
function byName<T extends { name: string }>(entries: T[], drop: string[] = []): Record<string, Json> {
  const out: Record<string, Json> = {}
  for (const { name, ...rest } of entries) {
    const fields: Record<string, unknown> = { ...rest }
    for (const field of drop) delete fields[field]
    out[name] = asWritten(fields) ?? null
  }
  return out
}

function written(parts: ConfigParts): Record<string, Json> {
  return {
    tiers: byName(parts.tiers),
    upstreams: byName(parts.upstreams),
    aliases: byName(parts.aliases, ['createdAt']),
    routing: { deadline_ms: parts.settings.deadlineMs, drain_ms: parts.settings.drainMs },
    usage: { minute_retention_days: parts.settings.minuteRetentionDays },
  }
}

const partsOfFile = (config: GatewayConfig): ConfigParts => ({
  tiers: config.tiers,
  upstreams: config.upstreams,
  aliases: config.aliases,
  settings: { deadlineMs: config.routing.deadlineMs, drainMs: config.routing.drainMs, minuteRetentionDays: config.usage.minuteRetentionDays },
})

const partsOfStored = (stored: StoredConfig): ConfigParts => ({ ...stored.routing, settings: stored.settings })

/** A path step as the config's error messages write it: bare when it is a plain word, else quoted. */
const step = (path: string, key: string) => {
  const name = /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? key : JSON.stringify(key)
  return path === '' ? name : `${path}.${name}`
}

/** Lists of objects (targets) are compared item by item; any other list as one value. */
const isObjectList = (value: Json): value is Json[] => Array.isArray(value) && value.every(isObject)

function compare(path: string, from: Json, to: Json, out: ConfigDifference[]): void {
  if (isObject(from) && isObject(to)) {
    for (const key of Object.keys(from)) {
      if (!(key in to)) out.push({ entry: step(path, key), change: 'removed', from: from[key] })
      else compare(step(path, key), from[key]!, to[key]!, out)
    }
    for (const key of Object.keys(to)) if (!(key in from)) out.push({ entry: step(path, key), change: 'added', to: to[key] })
    return
  }
  if (isObjectList(from) && isObjectList(to)) {
    for (let i = 0; i < Math.max(from.length, to.length); i++) {
      const entry = `${path}[${i}]`
      if (i >= to.length) out.push({ entry, change: 'removed', from: from[i] })
      else if (i >= from.length) out.push({ entry, change: 'added', to: to[i] })
      else compare(entry, from[i]!, to[i]!, out)
    }
    return
  }
  if (JSON.stringify(from) !== JSON.stringify(to)) out.push({ entry: path, change: 'changed', from, to })
}

/** Tiers and aliases keep the file's order (the first tier is the first key's, aliases list in order). */
function compareOrder(section: 'tiers' | 'aliases', from: Json, to: Json, out: ConfigDifference[]): void {
  const a = Object.keys(from as Record<string, Json>)
  const b = Object.keys(to as Record<string, Json>)
  const same = a.length === b.length && a.every((name) => b.includes(name))
  if (same && a.some((name, i) => b[i] !== name)) out.push({ entry: `${section} (order)`, change: 'changed', from: a, to: b })
}

/**
 * How `to` differs from `from`: `removed` entries are in `from` only, `added` in `to` only. An entry
 * missing on one side is one difference, not one per field.
 */
export function configDifferences(from: GatewayConfig | StoredConfig, to: GatewayConfig | StoredConfig): ConfigDifference[] {
  const parts = (config: GatewayConfig | StoredConfig) => ('version' in config ? partsOfStored(config) : partsOfFile(config))
  const a = written(parts(from))
  const b = written(parts(to))
  const out: ConfigDifference[] = []
  compare('', a, b, out)
  compareOrder('tiers', a.tiers!, b.tiers!, out)
  compareOrder('aliases', a.aliases!, b.aliases!, out)
  return out
}

/** One difference as a line: `tiers.free.requests_per_minute 20 → 30`, `aliases."openai/fast" removed`. */
export function describeDifference(difference: ConfigDifference): string {
  if (difference.change !== 'changed') return `${difference.entry} ${difference.change}`
  return `${difference.entry} ${JSON.stringify(difference.from)} → ${JSON.stringify(difference.to)}`
}

/** Differences for a log line: the first `most`, then how many more. */
export function describeDifferences(differences: ConfigDifference[], most = 20): string {
  const shown = differences.slice(0, most).map(describeDifference)
  if (differences.length > most) shown.push(`and ${differences.length - most} more`)
  return shown.join('; ')
}
