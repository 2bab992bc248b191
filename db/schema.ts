import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { LATENCY_BUCKETS } from './latency'

/** Tiers, upstreams and aliases mirror the config file; they are rewritten at start and on reload. */
export const tiers = sqliteTable('tiers', {
  name: text('name').primaryKey(),
  position: integer('position').notNull(),
  requestsPerMinute: integer('requests_per_minute').notNull(),
  tokensPerMinute: integer('tokens_per_minute').notNull(),
  maxConcurrent: integer('max_concurrent').notNull(),
  monthlyTokenQuota: integer('monthly_token_quota'),
  dailyRequestQuota: integer('daily_request_quota'),
  /** Budgets in nano-dollars (1e-9 USD); null: none. */
  dailyBudgetNanos: integer('daily_budget_nanos'),
  monthlyBudgetNanos: integer('monthly_budget_nanos'),
  /** JSON array of glob patterns over aliases; null means every alias. */
  models: text('models', { mode: 'json' }).$type<string[] | null>(),
})

/** Never holds a secret: only the name of the environment variable that does. */
export const upstreams = sqliteTable('upstreams', {
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
  options: text('options', { mode: 'json' }).$type<Record<string, unknown>>(),
})

export const aliases = sqliteTable('aliases', {
  name: text('name').primaryKey(),
  position: integer('position').notNull(),
  strategy: text('strategy').notNull(),
  createdAt: integer('created_at').notNull(),
  /** Every other setting of the alias (hosted tools, later additions), as one JSON object. */
  options: text('options', { mode: 'json' }).$type<Record<string, unknown>>(),
})

export const aliasTargets = sqliteTable(
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
    price: text('price', { mode: 'json' }).$type<{ input: number; output: number; cachedInput: number; cacheWrite: number } | null>(),
  },
  (table) => [primaryKey({ columns: [table.alias, table.position] })],
)

/** A caller key is stored as its SHA-256 hex digest plus the visible prefix; the key itself never. */
export const apiKeys = sqliteTable('api_keys', {
  id: text('id').primaryKey(),
  prefix: text('prefix').notNull().unique(),
  hash: text('hash').notNull().unique(),
  name: text('name').notNull(),
  tier: text('tier').notNull(),
  createdAt: integer('created_at').notNull(),
  expiresAt: integer('expires_at'),
  revokedAt: integer('revoked_at'),
  /** Per-key overrides of the tier's limits; null inherits the tier's value. */
  requestsPerMinute: integer('requests_per_minute'),
  tokensPerMinute: integer('tokens_per_minute'),
  maxConcurrent: integer('max_concurrent'),
  monthlyTokenQuota: integer('monthly_token_quota'),
  dailyRequestQuota: integer('daily_request_quota'),
  dailyBudgetNanos: integer('daily_budget_nanos'),
  monthlyBudgetNanos: integer('monthly_budget_nanos'),
})

/** Billing counters: one row per key x UTC day x alias x upstream, incremented in place. */
export const usageDaily = sqliteTable(
  'usage_daily',
  {
    keyId: text('key_id').notNull(),
    date: text('date').notNull(),
    alias: text('alias').notNull(),
    upstream: text('upstream').notNull(),
    requests: integer('requests').notNull().default(0),
    errors: integer('errors').notNull().default(0),
    promptTokens: integer('prompt_tokens').notNull().default(0),
    completionTokens: integer('completion_tokens').notNull().default(0),
    totalTokens: integer('total_tokens').notNull().default(0),
    /** Spend in nano-dollars (1e-9 USD): the sum of each request's exact cost. */
    costNanos: integer('cost_nanos').notNull().default(0),
    /** What response cache hits saved, in nano-dollars: the cost of the answers they repeated. */
    cacheSavedNanos: integer('cache_saved_nanos').notNull().default(0),
    latencyMsSum: integer('latency_ms_sum').notNull().default(0),
  },
  (table) => [
    primaryKey({ columns: [table.keyId, table.date, table.alias, table.upstream] }),
    // The operator's view reads across keys by date range.
    index('usage_daily_date').on(table.date),
  ],
)

const latencyBuckets = Object.fromEntries(Array.from({ length: LATENCY_BUCKETS }, (_, i) => [`lat${i}`, integer(`lat_${i}`).notNull().default(0)])) as Record<
  `lat${number}`,
  ReturnType<typeof integer>
>

/**
 * Per-minute rollups for the dashboard's time series, kept for a configurable retention. Latency
 * is a histogram (fixed buckets, one column each) so p50/p95 can be computed over any range by
 * adding counts.
 */
export const usageMinute = sqliteTable(
  'usage_minute',
  {
    /** Unix time of the minute's start, in seconds. */
    minute: integer('minute').notNull(),
    keyId: text('key_id').notNull(),
    alias: text('alias').notNull(),
    upstream: text('upstream').notNull(),
    requests: integer('requests').notNull().default(0),
    errors: integer('errors').notNull().default(0),
    promptTokens: integer('prompt_tokens').notNull().default(0),
    completionTokens: integer('completion_tokens').notNull().default(0),
    costNanos: integer('cost_nanos').notNull().default(0),
    cacheSavedNanos: integer('cache_saved_nanos').notNull().default(0),
    latencyMsSum: integer('latency_ms_sum').notNull().default(0),
    ...latencyBuckets,
  },
  (table) => [primaryKey({ columns: [table.minute, table.keyId, table.alias, table.upstream] })],
)

/**
 * How far each process's usage journal (`<database>.usage-<journal>.log`) has been folded into the
 * counters above: batches with a higher sequence number are not in the tables yet. A row lives as
 * long as its file; the journal of earlier versions is `legacy`.
 */
export const usageJournals = sqliteTable('usage_journals', {
  journal: text('journal').primaryKey(),
  foldedSeq: integer('folded_seq').notNull().default(0),
})

/**
 * One row whose `version` goes up in the same transaction as every change to `api_keys`. Key caches
 * compare it with the version they loaded: a key created by any process is found on its first use.
 */
export const keyTableVersion = sqliteTable('key_table_version', {
  id: integer('id').primaryKey(),
  version: integer('version').notNull().default(0),
})

/**
 * One row whose `version` goes up with every config write (start, reload, SIGHUP, on any process),
 * with the settings that are not rows of their own. Processes sharing the database compare it with
 * the version their routing was built from, and rebuild from the stored config when it moved.
 */
export const configState = sqliteTable('config_state', {
  id: integer('id').primaryKey(),
  version: integer('version').notNull().default(0),
  /** Where the config came from and the settings routing and usage take from it. */
  settings: text('settings', { mode: 'json' }).$type<{ source: string; deadlineMs: number; drainMs?: number; minuteRetentionDays: number } | null>(),
})

/**
 * The conversation store (src/conversations/store.ts): one row per answer the gateway keeps for a
 * later turn, an Anthropic message thread's turn or a Responses API response. Found by key and id
 * together, so another key's rows are never found; a history is rebuilt by walking `parent_id` up
 * that key. Request and answer are JSON text, kept as written: nothing queries inside them.
 */
export const conversations = sqliteTable(
  'conversations',
  {
    keyId: text('key_id').notNull(),
    id: text('id').notNull(),
    /** 'thread' | 'response' */
    kind: text('kind').notNull(),
    /** The upstream that holds the conversation when it was passed through natively; null: held here. */
    upstream: text('upstream'),
    parentId: text('parent_id'),
    request: text('request').notNull(),
    answer: text('answer').notNull(),
    /** Bytes of request and answer: a history's size is summed without reading them. */
    size: integer('size').notNull(),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    /** The row that continued this one (a thread is continued once); null: none yet. */
    continuedBy: text('continued_by'),
    /** A request continuing this thread holds it until then (ms); null or past: free. */
    claimedUntil: integer('claimed_until'),
  },
  (table) => [
    primaryKey({ columns: [table.keyId, table.id] }),
    // Pruning reads expired rows in batches.
    index('conversations_expires_at').on(table.expiresAt),
  ],
)

/**
 * The request log (src/request-log/): one row per request, its record as JSON text beside the
 * columns the listing filters on. `uid` is unique per record whoever wrote it, so a journal folded
 * twice writes nothing twice; `id` is the request's x-request-id (a caller may reuse one).
 */
export const requestLog = sqliteTable(
  'request_log',
  {
    uid: text('uid').primaryKey(),
    id: text('id').notNull(),
    /** When the request ended, ms since the epoch. */
    at: integer('at').notNull(),
    keyId: text('key_id'),
    alias: text('alias'),
    upstream: text('upstream'),
    status: integer('status').notNull(),
    errorType: text('error_type'),
    record: text('record').notNull(),
  },
  (table) => [
    // Newest first, page after page; pruning by age.
    index('request_log_at').on(table.at, table.uid),
    index('request_log_id').on(table.id),
    index('request_log_key').on(table.keyId, table.at),
  ],
)

/**
 * The exact response cache (src/cache/) on one instance: each answer under its key (a SHA-256 of the
 * request, see src/cache/key.ts), kept across restarts. A cluster keeps it in Redis instead.
 */
export const responseCache = sqliteTable(
  'response_cache',
  {
    key: text('key').primaryKey(),
    /** The answer's JSON text, as the inbound API's JSON answer. */
    body: text('body').notNull(),
    /** The upstream's usage (the pivot's shape) as JSON; null when it reported none. */
    usage: text('usage'),
    costNanos: integer('cost_nanos').notNull(),
    /** ms since the epoch. */
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
  },
  (table) => [index('response_cache_created_at').on(table.createdAt)],
)
