import { readFileSync } from 'node:fs'
import { type Static, Type } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { invalidConfig } from '../errors'
import { providerKinds } from '../providers'
import { DEFAULT_CONFIG } from './defaults'

export interface TierSettings {
  name: string
  requestsPerMinute: number
  tokensPerMinute: number
  maxConcurrent: number
  monthlyTokenQuota: number | null
  dailyRequestQuota: number | null
  /** Glob patterns over aliases; null means every alias. */
  models: string[] | null
}

export interface UpstreamSettings {
  name: string
  kind: string
  baseUrl: string | null
  /** Name of the environment variable holding the secret, never the secret. */
  apiKeyEnv: string | null
  timeoutMs: number
  connectTimeoutMs: number
  maxRetries: number
  failureThreshold: number
  cooldownMs: number
}

export type RoutingStrategy = 'fallback' | 'weighted'

export interface TargetSettings {
  upstream: string
  model: string
  weight: number
}

export interface AliasSettings {
  name: string
  strategy: RoutingStrategy
  targets: TargetSettings[]
}

export interface GatewayConfig {
  /** Where it came from, for messages: a file path or "built-in defaults". */
  source: string
  tiers: TierSettings[]
  upstreams: UpstreamSettings[]
  aliases: AliasSettings[]
  routing: { deadlineMs: number }
  usage: { minuteRetentionDays: number }
}

const PositiveInt = Type.Integer({ minimum: 1 })
const Millis = Type.Integer({ minimum: 1, maximum: 3_600_000 })
const strict = { additionalProperties: false } as const

const TierSchema = Type.Object(
  {
    requests_per_minute: PositiveInt,
    tokens_per_minute: PositiveInt,
    max_concurrent: PositiveInt,
    monthly_token_quota: Type.Optional(PositiveInt),
    daily_request_quota: Type.Optional(PositiveInt),
    models: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
  },
  strict,
)

const UpstreamSchema = Type.Object(
  {
    kind: Type.String(),
    base_url: Type.Optional(Type.String({ pattern: '^https?://' })),
    api_key_env: Type.Optional(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' })),
    timeout_ms: Type.Optional(Millis),
    connect_timeout_ms: Type.Optional(Millis),
    max_retries: Type.Optional(Type.Integer({ minimum: 0, maximum: 10 })),
    failure_threshold: Type.Optional(PositiveInt),
    cooldown_ms: Type.Optional(Millis),
  },
  strict,
)

const TargetSchema = Type.Object(
  {
    upstream: Type.String({ minLength: 1 }),
    model: Type.String({ minLength: 1 }),
    weight: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
  },
  strict,
)

const AliasSchema = Type.Object(
  {
    strategy: Type.Optional(Type.String()),
    targets: Type.Array(TargetSchema, { minItems: 1 }),
  },
  strict,
)

const ConfigFileSchema = Type.Object(
  {
    tiers: Type.Optional(Type.Record(Type.String(), TierSchema)),
    upstreams: Type.Optional(Type.Record(Type.String(), UpstreamSchema)),
    aliases: Type.Optional(Type.Record(Type.String(), AliasSchema)),
    routing: Type.Optional(Type.Object({ deadline_ms: Type.Optional(Millis) }, strict)),
    usage: Type.Optional(Type.Object({ minute_retention_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 366 })) }, strict)),
  },
  strict,
)

export type ConfigFile = Static<typeof ConfigFileSchema>

export const ALIAS_PATTERN = /^[a-z0-9][a-z0-9_-]*\/[A-Za-z0-9][A-Za-z0-9._:\/-]*$/
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/

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

/** Validates a parsed config file and fills every default. Throws a GatewayError naming the first bad field. */
export function parseGatewayConfig(raw: unknown, source: string): GatewayConfig {
  const first = Value.Errors(ConfigFileSchema, raw).First()
  if (first) {
    const message = first.message === 'Unexpected property' ? 'unknown field' : first.message.toLowerCase()
    throw configError(source, fieldName(first.path), message)
  }
  const file = raw as ConfigFile

  const tiers = Object.entries(file.tiers ?? {}).map(([name, tier]): TierSettings => {
    if (!NAME_PATTERN.test(name)) throw configError(source, `tiers."${name}"`, 'tier names are letters, digits, "-" and "_"')
    return {
      name,
      requestsPerMinute: tier.requests_per_minute,
      tokensPerMinute: tier.tokens_per_minute,
      maxConcurrent: tier.max_concurrent,
      monthlyTokenQuota: tier.monthly_token_quota ?? null,
      dailyRequestQuota: tier.daily_request_quota ?? null,
      models: tier.models ?? null,
    }
  })

  const upstreams = Object.entries(file.upstreams ?? {}).map(([name, upstream]): UpstreamSettings => {
    const field = `upstreams.${name}`
    if (!NAME_PATTERN.test(name)) throw configError(source, `upstreams."${name}"`, 'upstream names are letters, digits, "-" and "_"')
    const kind = providerKinds.get(upstream.kind)
    if (!kind) {
      throw configError(source, `${field}.kind`, `unknown kind "${upstream.kind}" (expected one of: ${[...providerKinds.keys()].join(', ')})`)
    }
    const baseUrl = upstream.base_url?.replace(/\/+$/, '') ?? kind.defaultBaseUrl
    if (kind.needsBaseUrl && baseUrl === null) throw configError(source, `${field}.base_url`, `required for kind "${upstream.kind}"`)
    return {
      name,
      kind: upstream.kind,
      baseUrl: kind.needsBaseUrl ? baseUrl : null,
      apiKeyEnv: upstream.api_key_env ?? null,
      timeoutMs: upstream.timeout_ms ?? 60_000,
      connectTimeoutMs: upstream.connect_timeout_ms ?? 10_000,
      maxRetries: upstream.max_retries ?? 2,
      failureThreshold: upstream.failure_threshold ?? 5,
      cooldownMs: upstream.cooldown_ms ?? 30_000,
    }
  })
  const upstreamByName = new Map(upstreams.map((u) => [u.name, u]))

  const aliases = Object.entries(file.aliases ?? {}).map(([name, alias]): AliasSettings => {
    const field = `aliases."${name}"`
    if (!ALIAS_PATTERN.test(name)) throw configError(source, field, 'alias names look like <provider_prefix>/<alias_name>, e.g. "openai/fast"')
    const strategy = alias.strategy ?? 'fallback'
    if (strategy !== 'fallback' && strategy !== 'weighted') {
      throw configError(source, `${field}.strategy`, `expected "fallback" or "weighted", got "${strategy}"`)
    }
    const targets = alias.targets.map((target, i): TargetSettings => {
      const upstream = upstreamByName.get(target.upstream)
      if (!upstream) throw configError(source, `${field}.targets[${i}].upstream`, `no upstream named "${target.upstream}" in this config`)
      const models = providerKinds.get(upstream.kind)?.models
      if (models && !models.includes(target.model)) {
        throw configError(source, `${field}.targets[${i}].model`, `kind "${upstream.kind}" serves only ${models.map((m) => `"${m}"`).join(', ')}`)
      }
      return { upstream: target.upstream, model: target.model, weight: target.weight ?? 1 }
    })
    if (strategy === 'weighted' && targets.every((t) => t.weight === 0)) {
      throw configError(source, `${field}.targets`, 'a weighted alias needs at least one target with a weight above 0')
    }
    return { name, strategy, targets }
  })

  return {
    source,
    tiers,
    upstreams,
    aliases,
    routing: { deadlineMs: file.routing?.deadline_ms ?? 120_000 },
    usage: { minuteRetentionDays: file.usage?.minute_retention_days ?? 7 },
  }
}

/** Reads the config file (TOML or JSON), or the built-in defaults when there is none. */
export function loadGatewayConfig(path: string | null): GatewayConfig {
  if (path === null) return parseGatewayConfig(DEFAULT_CONFIG, 'built-in defaults')
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
  return parseGatewayConfig(raw, path)
}
