import { bigint, index, integer, jsonb, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { LATENCY_BUCKETS } from '../latency'

/**
 * The Postgres twin of db/schema.ts (SQLite): the same tables, columns and keys, so the same stores
 * work on either (test/storage-parity.test.ts keeps them in step). Times are ms since the epoch and
 * counters can pass 2^31, so both are bigint here, read back as JS numbers (exact below 2^53).
 */
const big = (name: string) => bigint(name, { mode: 'number' })

/** Tiers, upstreams and aliases mirror the config file; they are rewritten at start and on reload. */
export const tiers = pgTable('tiers', {
  name: text('name').primaryKey(),
  position: integer('position').notNull(),
  requestsPerMinute: big('requests_per_minute').notNull(),
  tokensPerMinute: big('tokens_per_minute').notNull(),
  maxConcurrent: big('max_concurrent').notNull(),
  monthlyTokenQuota: big('monthly_token_quota'),
  dailyRequestQuota: big('daily_request_quota'),
  /** Budgets in nano-dollars (1e-9 USD); null: none. */
  dailyBudgetNanos: big('daily_budget_nanos'),
  monthlyBudgetNanos: big('monthly_budget_nanos'),
  /** Glob patterns over aliases; null means every alias. */
  models: jsonb('models').$type<string[] | null>(),
})

/** Never holds a secret: only the name of the environment variable that does. */
export const upstreams = pgTable('upstreams', {
  name: text('name').primaryKey(),
  kind: text('kind').notNull(),
  baseUrl: text('base_url'),
  apiKeyEnv: text('api_key_env'),
  timeoutMs: integer('timeout_ms').notNull(),
  connectTimeoutMs: integer('connect_timeout_ms').notNull(),
  maxRetries: integer('max_retries').notNull(),
  failureThreshold: integer('failure_threshold').notNull(),
  cooldownMs: integer('cooldown_ms').notNull(),
  /** Every other setting of the upstream (kind-specific fields, later additions), as one JSON object. */
  options: jsonb('options').$type<Record<string, unknown>>(),
})

export const aliases = pgTable('aliases', {
  name: text('name').primaryKey(),
  position: integer('position').notNull(),
  strategy: text('strategy').notNull(),
  createdAt: big('created_at').notNull(),
  /** Every other setting of the alias (hosted tools, later additions), as one JSON object. */
  options: jsonb('options').$type<Record<string, unknown>>(),
})

export const aliasTargets = pgTable(
  'alias_targets',
  {
    alias: text('alias')
      .notNull()
      .references(() => aliases.name, { onDelete: 'cascade' }),
    position: integer('position').notNull(),
    upstream: text('upstream').notNull(),
    model: text('model').notNull(),
    weight: integer('weight').notNull(),
    /** The target's price from the config (micro-USD per million tokens); null: the built-in table's. */
    price: jsonb('price').$type<{ input: number; output: number; cachedInput: number; cacheWrite: number } | null>(),
  },
  (table) => [primaryKey({ columns: [table.alias, table.position] })],
)

/** A caller key is stored as its SHA-256 hex digest plus the visible prefix; the key itself never. */
export const apiKeys = pgTable('api_keys', {
  id: text('id').primaryKey(),
  prefix: text('prefix').notNull().unique(),
  hash: text('hash').notNull().unique(),
  name: text('name').notNull(),
  tier: text('tier').notNull(),
  createdAt: big('created_at').notNull(),
  expiresAt: big('expires_at'),
  revokedAt: big('revoked_at'),
  /** Per-key overrides of the tier's limits; null inherits the tier's value. */
  requestsPerMinute: big('requests_per_minute'),
  tokensPerMinute: big('tokens_per_minute'),
  maxConcurrent: big('max_concurrent'),
  monthlyTokenQuota: big('monthly_token_quota'),
  dailyRequestQuota: big('daily_request_quota'),
  dailyBudgetNanos: big('daily_budget_nanos'),
  monthlyBudgetNanos: big('monthly_budget_nanos'),
})

/** Billing counters: one row per key x UTC day x alias x upstream, incremented in place. */
export const usageDaily = pgTable(
  'usage_daily',
  {
    keyId: text('key_id').notNull(),
    date: text('date').notNull(),
    alias: text('alias').notNull(),
    upstream: text('upstream').notNull(),
    requests: big('requests').notNull().default(0),
    errors: big('errors').notNull().default(0),
    promptTokens: big('prompt_tokens').notNull().default(0),
    completionTokens: big('completion_tokens').notNull().default(0),
    totalTokens: big('total_tokens').notNull().default(0),
    /** Spend in nano-dollars (1e-9 USD): the sum of each request's exact cost. */
    costNanos: big('cost_nanos').notNull().default(0),
    /** What response cache hits saved, in nano-dollars (see db/schema.ts). */
    cacheSavedNanos: big('cache_saved_nanos').notNull().default(0),
    latencyMsSum: big('latency_ms_sum').notNull().default(0),
  },
  (table) => [primaryKey({ columns: [table.keyId, table.date, table.alias, table.upstream] }), index('usage_daily_date').on(table.date)],
)

const latencyBuckets = Object.fromEntries(Array.from({ length: LATENCY_BUCKETS }, (_, i) => [`lat${i}`, big(`lat_${i}`).notNull().default(0)])) as Record<
  `lat${number}`,
  ReturnType<typeof big>
>

/** Per-minute rollups for the dashboard's time series (see db/schema.ts). */
export const usageMinute = pgTable(
  'usage_minute',
  {
    /** Unix time of the minute's start, in seconds. */
    minute: big('minute').notNull(),
    keyId: text('key_id').notNull(),
    alias: text('alias').notNull(),
    upstream: text('upstream').notNull(),
    requests: big('requests').notNull().default(0),
    errors: big('errors').notNull().default(0),
    promptTokens: big('prompt_tokens').notNull().default(0),
    completionTokens: big('completion_tokens').notNull().default(0),
    costNanos: big('cost_nanos').notNull().default(0),
    /** What response cache hits saved, in nano-dollars (see db/schema.ts). */
    cacheSavedNanos: big('cache_saved_nanos').notNull().default(0),
    latencyMsSum: big('latency_ms_sum').notNull().default(0),
    ...latencyBuckets,
  },
  (table) => [primaryKey({ columns: [table.minute, table.keyId, table.alias, table.upstream] })],
)

/**
 * How far each usage log has been folded into the counters above: a process's local journal, or
 * the shared Redis usage stream (`redis:<epoch>`). Entries with a higher sequence are not in yet.
 */
export const usageJournals = pgTable('usage_journals', {
  journal: text('journal').primaryKey(),
  foldedSeq: big('folded_seq').notNull().default(0),
})

/** Goes up in the same transaction as every change to `api_keys` (see db/schema.ts). */
export const keyTableVersion = pgTable('key_table_version', {
  id: integer('id').primaryKey(),
  version: big('version').notNull().default(0),
})

/** Goes up with every config write, with the settings that are not rows of their own (see db/schema.ts). */
export const configState = pgTable('config_state', {
  id: integer('id').primaryKey(),
  version: big('version').notNull().default(0),
  settings: jsonb('settings').$type<{ source: string; deadlineMs: number; drainMs?: number; minuteRetentionDays: number } | null>(),
})

/** The conversation store (see db/schema.ts). Request and answer are text, not jsonb: stored and read whole, never queried. */
export const conversations = pgTable(
  'conversations',
  {
    keyId: text('key_id').notNull(),
    id: text('id').notNull(),
    kind: text('kind').notNull(),
    upstream: text('upstream'),
    parentId: text('parent_id'),
    request: text('request').notNull(),
    answer: text('answer').notNull(),
    size: big('size').notNull(),
    createdAt: big('created_at').notNull(),
    expiresAt: big('expires_at').notNull(),
    continuedBy: text('continued_by'),
    claimedUntil: big('claimed_until'),
  },
  (table) => [primaryKey({ columns: [table.keyId, table.id] }), index('conversations_expires_at').on(table.expiresAt)],
)

/** The request log (see db/schema.ts). The record is text, not jsonb: stored and read whole, never queried. */
export const requestLog = pgTable(
  'request_log',
  {
    uid: text('uid').primaryKey(),
    id: text('id').notNull(),
    at: big('at').notNull(),
    keyId: text('key_id'),
    alias: text('alias'),
    upstream: text('upstream'),
    status: integer('status').notNull(),
    errorType: text('error_type'),
    record: text('record').notNull(),
  },
  (table) => [index('request_log_at').on(table.at, table.uid), index('request_log_id').on(table.id), index('request_log_key').on(table.keyId, table.at)],
)

/** The response cache (see db/schema.ts): in step with SQLite's; a cluster keeps its cache in Redis. */
export const responseCache = pgTable(
  'response_cache',
  {
    key: text('key').primaryKey(),
    body: text('body').notNull(),
    usage: text('usage'),
    costNanos: big('cost_nanos').notNull(),
    createdAt: big('created_at').notNull(),
    expiresAt: big('expires_at').notNull(),
  },
  (table) => [index('response_cache_created_at').on(table.createdAt)],
)
