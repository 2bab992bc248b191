import { readFileSync } from 'node:fs'
import { Value } from '@sinclair/typebox/value'
import { invalidConfig } from '../errors'
import { nanosOfUsd, parsePrice } from '../spend/price'
import { DEFAULT_CONFIG, DEFAULT_UPSTREAM_CONNECTIONS } from './defaults'
import { ALIAS_PATTERN, ConfigFileSchema, type ConfigFile, NAME_PATTERN } from './schema'
import {
  type AliasCacheSettings,
  type AliasSettings,
  type CacheSettings,
  type BodyMode,
  type GatewayConfig,
  KIND_FIELDS,
  type KindField,
  type RequestLogSettings,
  ROUTING_STRATEGIES,
  type RoutingStrategy,
  type TargetLimits,
  type TargetSettings,
  type TierSettings,
  type UpstreamKindFacts,
  type UpstreamSettings,
} from './types'

/** The upstream kinds a config may name, by name: the providers this build implements (see providers/index.ts). */
export type UpstreamKinds = ReadonlyMap<string, UpstreamKindFacts>

/** "/aliases/local~1echo/targets/0/model" -> 'aliases."local/echo".targets[0].model' */
function fieldName(pointer: string): string {
  let out = ''
  for (const raw of pointer.split('/').slice(1)) {
    const part = raw.replaceAll('~1', '/').replaceAll('~0', '~')
    if (/^\d+$/.test(part)) out += `[${part}]`
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(part)) out += out === '' ? part : `.${part}`
    else out += `${out === '' ? '' : '.'}"${part}"`
  }
  return out || '(root)'
}

const configError = (source: string, field: string, message: string) => invalidConfig(`Invalid config (${source}): ${field}: ${message}`, field)

/** The file's tiers, in its order (the first is the first key's). */
function tierSettings(file: ConfigFile, source: string): TierSettings[] {
  return Object.entries(file.tiers ?? {}).map(([name, tier]): TierSettings => {
    if (!NAME_PATTERN.test(name)) throw configError(source, `tiers."${name}"`, 'tier names are letters, digits, "-" and "_"')
    return {
      name,
      requestsPerMinute: tier.requests_per_minute,
      tokensPerMinute: tier.tokens_per_minute,
      maxConcurrent: tier.max_concurrent,
      monthlyTokenQuota: tier.monthly_token_quota ?? null,
      dailyRequestQuota: tier.daily_request_quota ?? null,
      dailyBudgetNanos: tier.daily_budget_usd === undefined ? null : nanosOfUsd(tier.daily_budget_usd),
      monthlyBudgetNanos: tier.monthly_budget_usd === undefined ? null : nanosOfUsd(tier.monthly_budget_usd),
      models: tier.models ?? null,
    }
  })
}

/** The request log's settings, defaults filled in; per-tier body modes by tier name. */
function requestLogSettings(file: ConfigFile): RequestLogSettings {
  const log = file.request_log ?? {}
  const tierBodies: Record<string, BodyMode> = {}
  for (const [name, tier] of Object.entries(file.tiers ?? {})) if (tier.request_log?.bodies) tierBodies[name] = tier.request_log.bodies
  return {
    enabled: log.enabled ?? true,
    bodies: log.bodies ?? 'off',
    tierBodies,
    maxBodyBytes: log.max_body_bytes ?? 65_536,
    redact: log.redact ?? [],
    retentionDays: log.retention_days ?? 30,
  }
}

/** SHA-256 of a config's text, hex: equal hashes mean byte-identical files. */
export const configHash = (text: string): string => new Bun.CryptoHasher('sha256').update(text).digest('hex')

/** One upstream's settings, checked: its kind known, its base URL, the fields its kind takes, and what the kind needs at start. */
function upstreamSettings(
  name: string,
  upstream: NonNullable<ConfigFile['upstreams']>[string],
  kinds: UpstreamKinds,
  source: string,
  vars: Readonly<Record<string, string | undefined>>,
): UpstreamSettings {
  const field = `upstreams.${name}`
  if (!NAME_PATTERN.test(name)) throw configError(source, `upstreams."${name}"`, 'upstream names are letters, digits, "-" and "_"')
  const kind = kinds.get(upstream.kind)
  if (!kind) {
    throw configError(source, `${field}.kind`, `unknown kind "${upstream.kind}" (expected one of: ${[...kinds.keys()].join(', ')})`)
  }
  const baseUrl = upstream.base_url?.replace(/\/+$/, '') ?? kind.defaultBaseUrl
  if (kind.needsBaseUrl && baseUrl === null) throw configError(source, `${field}.base_url`, `required for kind "${upstream.kind}"`)
  if (upstream.responses === 'native' && !kind.nativeResponses) {
    throw configError(source, `${field}.responses`, `kind "${upstream.kind}" has no Responses API of its own: use "translate"`)
  }
  const settings: UpstreamSettings = {
    name,
    kind: upstream.kind,
    // A kind that works its URL out from other fields (a region, a location) keeps a base_url only when one is given.
    baseUrl: kind.needsBaseUrl ? baseUrl : (upstream.base_url?.replace(/\/+$/, '') ?? null),
    apiKeyEnv: upstream.api_key_env ?? null,
    timeoutMs: upstream.timeout_ms ?? 60_000,
    connectTimeoutMs: upstream.connect_timeout_ms ?? 10_000,
    maxRetries: upstream.max_retries ?? 2,
    failureThreshold: upstream.failure_threshold ?? 5,
    cooldownMs: upstream.cooldown_ms ?? 30_000,
    maxReasoningEffort: upstream.max_reasoning_effort ?? 'high',
    midSystem: upstream.mid_system ?? 'keep',
    responses: upstream.responses ?? 'translate',
  }
  for (const [configName, settingName] of Object.entries(KIND_FIELDS) as [KindField, (typeof KIND_FIELDS)[KindField]][]) {
    const value = upstream[configName]
    if (value === undefined) continue
    if (!kind.fields?.includes(configName)) throw configError(source, `${field}.${configName}`, `unknown field for kind "${upstream.kind}"`)
    settings[settingName] = value
  }
  const problem = kind.check?.(settings, vars)
  if (problem) throw configError(source, `${field}.${problem.field}`, problem.message)
  return settings
}

/**
 * The `rpm` / `tpm` of targets, by upstream and model: they are the provider account's limits, so two
 * targets naming the same upstream and model may not disagree (one that names none takes the other's).
 */
class AccountLimits {
  private readonly seen = new Map<string, { limits: TargetLimits; field: string }>()

  constructor(private readonly fail: (field: string, message: string) => never) {}

  note(target: { upstream: string; model: string; rpm?: number; tpm?: number }, field: string): TargetLimits {
    const limits = { rpm: target.rpm ?? null, tpm: target.tpm ?? null }
    if (limits.rpm === null && limits.tpm === null) return limits
    const key = `${target.upstream}/${target.model}`
    const earlier = this.seen.get(key)
    if (!earlier) this.seen.set(key, { limits, field })
    else if (earlier.limits.rpm !== limits.rpm || earlier.limits.tpm !== limits.tpm) {
      this.fail(
        field,
        `upstream "${target.upstream}" model "${target.model}" has other rpm / tpm at ${earlier.field}: they are one account's limits, set them alike`,
      )
    }
    return limits
  }
}

/**
 * Validates a parsed config file and fills every default. Throws a GatewayError naming the first bad
 * field. `text` is what was parsed, for the hash; without it the hash is taken over `raw` as JSON.
 */
export function parseGatewayConfig(
  raw: unknown,
  source: string,
  kinds: UpstreamKinds,
  text: string = JSON.stringify(raw),
  vars: Readonly<Record<string, string | undefined>> = process.env,
): GatewayConfig {
  const first = Value.Errors(ConfigFileSchema, raw).First()
  if (first) {
    const message = first.message === 'Unexpected property' ? 'unknown field' : first.message.toLowerCase()
    throw configError(source, fieldName(first.path), message)
  }
  const file = raw as ConfigFile

  const tiers = tierSettings(file, source)

  const upstreams = Object.entries(file.upstreams ?? {}).map(([name, upstream]) => upstreamSettings(name, upstream, kinds, source, vars))
  const upstreamByName = new Map(upstreams.map((u) => [u.name, u]))
  const fail = (field: string, message: string): never => {
    throw configError(source, field, message)
  }
  const prices = new Map(Object.entries(file.prices ?? {}).map(([model, price]) => [model, parsePrice(price, `prices."${model}"`, fail)]))

  const accountLimits = new AccountLimits(fail)
  const aliases = Object.entries(file.aliases ?? {}).map(([name, alias]): AliasSettings => {
    const field = `aliases."${name}"`
    if (!ALIAS_PATTERN.test(name)) throw configError(source, field, 'alias names look like <provider_prefix>/<alias_name>, e.g. "openai/fast"')
    const strategy = (alias.strategy ?? 'fallback') as RoutingStrategy
    if (!ROUTING_STRATEGIES.includes(strategy)) {
      throw configError(source, `${field}.strategy`, `expected one of ${ROUTING_STRATEGIES.map((s) => `"${s}"`).join(', ')}, got "${strategy}"`)
    }
    const targets = alias.targets.map((target, i): TargetSettings => {
      const upstream = upstreamByName.get(target.upstream)
      if (!upstream) throw configError(source, `${field}.targets[${i}].upstream`, `no upstream named "${target.upstream}" in this config`)
      const models = kinds.get(upstream.kind)?.models
      if (models && !models.includes(target.model)) {
        throw configError(source, `${field}.targets[${i}].model`, `kind "${upstream.kind}" serves only ${models.map((m) => `"${m}"`).join(', ')}`)
      }
      const price = target.price ? parsePrice(target.price, `${field}.targets[${i}].price`, fail) : (prices.get(target.model) ?? null)
      return { upstream: target.upstream, model: target.model, weight: target.weight ?? 1, price }
    })
    if (strategy === 'weighted' && targets.every((t) => t.weight === 0)) {
      throw configError(source, `${field}.targets`, 'a weighted alias needs at least one target with a weight above 0')
    }
    const limits = alias.targets.map((target, i) => accountLimits.note(target, `${field}.targets[${i}]`))
    const settings: AliasSettings = { name, strategy, targets, hostedTools: alias.hosted_tools ?? 'drop' }
    if (limits.some((l) => l.rpm !== null || l.tpm !== null)) settings.targetLimits = limits
    return settings
  })

  return {
    source,
    hash: configHash(text),
    tiers,
    upstreams,
    aliases,
    routing: { deadlineMs: file.routing?.deadline_ms ?? 120_000, drainMs: file.routing?.drain_ms ?? 10_000 },
    usage: { minuteRetentionDays: file.usage?.minute_retention_days ?? 7 },
    http: { maxUpstreamConnections: file.http?.max_upstream_connections ?? DEFAULT_UPSTREAM_CONNECTIONS },
    conversations: { responsesTtlDays: file.conversations?.responses_ttl_days ?? 30 },
    requestLog: requestLogSettings(file),
    cache: cacheSettings(file),
  }
}

/** `[cache]` and every alias's `cache` table (the schema has checked their fields). */
function cacheSettings(file: ConfigFile): CacheSettings {
  const aliases = new Map<string, AliasCacheSettings>()
  for (const [name, alias] of Object.entries(file.aliases ?? {})) {
    if (alias.cache) aliases.set(name, { ttlMs: alias.cache.ttl_s * 1000, scope: alias.cache.scope ?? 'key', toolCalls: alias.cache.tool_calls ?? false })
  }
  return { maxEntries: file.cache?.max_entries ?? 10_000, maxEntryBytes: file.cache?.max_entry_bytes ?? 1024 * 1024, aliases }
}

/** Reads the config file (TOML or JSON), or the built-in defaults when there is none. */
export function loadGatewayConfig(path: string | null, kinds: UpstreamKinds, vars: Readonly<Record<string, string | undefined>> = process.env): GatewayConfig {
  if (path === null) return parseGatewayConfig(DEFAULT_CONFIG, 'built-in defaults', kinds, undefined, vars)
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw configError(path, '(file)', `cannot read: ${(error as Error).message}`)
  }
  let raw: unknown
  try {
    raw = path.endsWith('.json') ? JSON.parse(text) : Bun.TOML.parse(text)
  } catch (error) {
    throw configError(path, '(syntax)', (error as Error).message)
  }
  return parseGatewayConfig(raw, path, kinds, text, vars)
}
