/**
 * The settings the gateway runs on, as plain data: what providers, routing, limits and storage are
 * built from. A leaf: it imports nothing, so every layer may use it without reaching up.
 */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error'

/** `reasoning_effort` values, from least to most. */
export type ReasoningEffort = 'low' | 'medium' | 'high' | 'xhigh'

/**
 * What an upstream gets for a system message that is not at the start of the conversation: kept
 * in place (`keep`), a user message wrapped in `<system-reminder>` (`as_user`), or appended to the
 * leading system message (`fold`), for servers whose chat templates refuse a system message later on.
 */
export type MidSystemMode = 'keep' | 'as_user' | 'fold'

export interface TierSettings {
  name: string
  requestsPerMinute: number
  tokensPerMinute: number
  maxConcurrent: number
  monthlyTokenQuota: number | null
  dailyRequestQuota: number | null
  /** Spend per UTC day and month in nano-dollars (1e-9 USD); null: no budget. */
  dailyBudgetNanos: number | null
  monthlyBudgetNanos: number | null
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
  /** The highest `reasoning_effort` this upstream accepts (efforts made from thinking budgets are capped at it). */
  maxReasoningEffort: ReasoningEffort
  midSystem: MidSystemMode
  /**
   * How the Responses API reaches it: `native` (its own /responses, the body as sent) or `translate`
   * (through chat completions). Only the openai kind can be native.
   */
  responses: 'native' | 'translate'
  /** Kind-specific settings (each kind lists the ones it takes in its facts); absent elsewhere. */
  project?: string
  location?: string
  /** Names an environment variable holding a service-account JSON file's path (Vertex AI). */
  credentialsFileEnv?: string
  region?: string
  accessKeyIdEnv?: string
  secretAccessKeyEnv?: string
  sessionTokenEnv?: string
  endpoint?: string
  apiVersion?: string
}

/** The kind-specific settings, by their config field names. */
export const KIND_FIELDS = {
  project: 'project',
  location: 'location',
  credentials_file_env: 'credentialsFileEnv',
  region: 'region',
  access_key_id_env: 'accessKeyIdEnv',
  secret_access_key_env: 'secretAccessKeyEnv',
  session_token_env: 'sessionTokenEnv',
  endpoint: 'endpoint',
  api_version: 'apiVersion',
} as const

export type KindField = keyof typeof KIND_FIELDS

/** The upstream settings kept in columns of their own; every other field is stored in one JSON value beside them. */
export const UPSTREAM_COLUMNS = [
  'name',
  'kind',
  'baseUrl',
  'apiKeyEnv',
  'timeoutMs',
  'connectTimeoutMs',
  'maxRetries',
  'failureThreshold',
  'cooldownMs',
] as const

export type RoutingStrategy = 'fallback' | 'weighted' | 'least_latency' | 'least_busy'

/** The strategies an alias may name, as the config writes them. */
export const ROUTING_STRATEGIES: readonly RoutingStrategy[] = ['fallback', 'weighted', 'least_latency', 'least_busy']

/**
 * A provider account's own limits on one upstream and model (`rpm` / `tpm` on a target): shared by
 * every alias that names that upstream and model; null: no limit of that kind.
 */
export interface TargetLimits {
  rpm: number | null
  tpm: number | null
}

/**
 * One model's prices in micro-dollars (1e-6 USD) per million tokens: USD per million with at most
 * six decimals, held as integers so that every cost is exact.
 */
export interface ModelPrice {
  input: number
  output: number
  /** Cache reads. */
  cachedInput: number
  /** Cache writes (Anthropic's cache creation). */
  cacheWrite: number
}

export interface TargetSettings {
  upstream: string
  model: string
  weight: number
  /** The target's own price, or the config's `[prices."<model>"]`; null: the built-in table's, if any. */
  price: ModelPrice | null
}

export interface AliasSettings {
  name: string
  strategy: RoutingStrategy
  targets: TargetSettings[]
  /** Hosted tools (web_search...) a target cannot run: left out and named (`drop`), or the request refused (`refuse`). */
  hostedTools: 'drop' | 'refuse'
  /**
   * Each target's `rpm` / `tpm`, by position; absent when no target of the alias has one. Kept in the
   * alias's options (its targets' rows hold no more than they did).
   */
  targetLimits?: TargetLimits[]
}

/** The alias settings kept in an alias row's JSON options: every setting but its name, strategy and targets. */
export type AliasOptions = Omit<AliasSettings, 'name' | 'strategy' | 'targets'>

/** Defaults of the alias options that rows written by earlier versions do not hold. */
export const ALIAS_OPTION_DEFAULTS: AliasOptions = { hostedTools: 'drop' }

export interface GatewayConfig {
  /** Where it came from, for messages: a file path or "built-in defaults". */
  source: string
  /** SHA-256 (hex) of the file's text as read (of the built-in defaults as JSON): tells instances' files apart. */
  hash: string
  tiers: TierSettings[]
  upstreams: UpstreamSettings[]
  aliases: AliasSettings[]
  routing: { deadlineMs: number; drainMs: number }
  usage: { minuteRetentionDays: number }
  /** Per instance: not stored, each process applies its own file's value. */
  http: { maxUpstreamConnections: number }
  /**
   * Per instance, like `http`: each record's expiry is fixed when it is written, so instances on one
   * database may differ without disagreeing on what is expired.
   */
  conversations: { responsesTtlDays: number }
  /** Per instance, like `http`: what this instance's request log keeps (src/request-log/). */
  requestLog: RequestLogSettings
  /** Per instance, like `http`: the exact response cache's bounds and the aliases it serves (src/cache/). */
  cache: CacheSettings
}

/** Whose answers a cached request may get: the same key's, its tier's, or any caller's of the alias. */
export type CacheScope = 'key' | 'tier' | 'alias'

/** An alias's `cache = { ttl_s, scope, tool_calls }`. */
export interface AliasCacheSettings {
  ttlMs: number
  scope: CacheScope
  /** Whether answers that call tools are kept too (off: an agent's tool call usually depends on the world). */
  toolCalls: boolean
}

export interface CacheSettings {
  maxEntries: number
  /** An answer larger than this (its JSON text, in bytes) is not kept. */
  maxEntryBytes: number
  /** By alias name; an alias not here is not cached. */
  aliases: ReadonlyMap<string, AliasCacheSettings>
}

/** Which requests keep their bodies in the request log: none, those that failed, or every one. */
export type BodyMode = 'off' | 'errors' | 'all'

export interface RequestLogSettings {
  /** Off: no records at all (the bench's baseline). */
  enabled: boolean
  bodies: BodyMode
  /** `[tiers.NAME.request_log] bodies`, by tier name: overrides `bodies` for that tier's keys. */
  tierBodies: Record<string, BodyMode>
  /** A kept body is cut at this many bytes, with a marker saying how long it was. */
  maxBodyBytes: number
  /** Dotted paths into request bodies (`metadata.secret`, `*` for any member or element) whose values are never kept. */
  redact: string[]
  /** Records older than this are pruned. */
  retentionDays: number
}

/** What the config checks about an upstream kind (`kind = "..."`); the provider itself is built later. */
export interface UpstreamKindFacts {
  kind: string
  needsBaseUrl: boolean
  defaultBaseUrl: string | null
  /** Models this kind can serve; null means any name the upstream accepts. */
  models: readonly string[] | null
  /** Whether it can serve the Responses API natively (`responses = "native"`). */
  nativeResponses?: boolean
  /** The kind-specific config fields it takes (any other of them is refused as unknown for this kind). */
  fields?: readonly KindField[]
  /**
   * What the kind needs at start (a required field, a set variable, a readable file): the first
   * problem, naming its field, or null. Run at start and at every reload, so a bad config is refused.
   */
  check?(settings: UpstreamSettings, env: Readonly<Record<string, string | undefined>>): { field: string; message: string } | null
}

/** The config as stored: what routing is built from, at start and at every reload. */
export interface StoredRouting {
  tiers: TierSettings[]
  upstreams: UpstreamSettings[]
  aliases: (AliasSettings & { createdAt: number })[]
}

/** What a config sets besides its rows: kept with it, so processes rebuilding from the store agree. */
export interface ConfigSettings {
  /** Where it came from, for messages: a file path or "built-in defaults". */
  source: string
  deadlineMs: number
  /** How long a stream whose caller left is still read for its usage. */
  drainMs: number
  minuteRetentionDays: number
  /** The hash of the file that wrote this config (GatewayConfig.hash); null: written before hashes were kept. */
  hash: string | null
  /** When it was written (ms since the epoch); null: written before this was kept. */
  writtenAt: number | null
}

/** The config as one store holds it, at one version of it. */
export interface StoredConfig {
  routing: StoredRouting
  settings: ConfigSettings
  /** Goes up with every write of the config, by any process. */
  version: number
}

/** Where the config is kept, so that every process on one database routes alike. */
export interface ConfigStore {
  /**
   * Writes the config (it is authoritative: entries it no longer names are removed) and reads back
   * what routing is built from, in one transaction; `build` runs inside it, so if it throws,
   * nothing changes. Refuses to drop a tier that keys still use.
   */
  apply<T>(config: GatewayConfig, now: number, build: (stored: StoredConfig) => T): Promise<T>
  /** The config version: cheap, for processes that watch for writes by others. */
  version(): Promise<number>
  /** The stored config, as another process last wrote it; null when none was ever written. */
  read(): Promise<StoredConfig | null>
  /** Whether no config was ever written (a database no server has started on). */
  isEmpty(): Promise<boolean>
}

/** The settings a config file stores beside its rows, written at `now`. */
export const settingsOf = (config: GatewayConfig, now: number): ConfigSettings => ({
  source: config.source,
  deadlineMs: config.routing.deadlineMs,
  drainMs: config.routing.drainMs,
  minuteRetentionDays: config.usage.minuteRetentionDays,
  hash: config.hash,
  writtenAt: now,
})
