import { type Static, Type } from '@sinclair/typebox'

/** The config file's shape (TOML or JSON, snake_case), checked before anything is built from it. */

const PositiveInt = Type.Integer({ minimum: 1 })
/** Reasoning efforts from least to most; `xhigh` only some OpenAI-compatible servers accept. */
export const REASONING_EFFORTS = ['low', 'medium', 'high', 'xhigh'] as const
/** What an upstream gets for a system message after the first turn: as is, as a user reminder, or folded into the first. */
export const MID_SYSTEM_MODES = ['keep', 'as_user', 'fold'] as const
const Millis = Type.Integer({ minimum: 1, maximum: 3_600_000 })
/** The name of an environment variable (holding a secret, or a file's path): never the value itself. */
const EnvName = Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' })
const strict = { additionalProperties: false } as const

/** USD per million tokens. */
const Usd = Type.Number({ minimum: 0, maximum: 1_000_000 })
const PriceSchema = Type.Object(
  {
    input: Usd,
    output: Usd,
    cached_input: Type.Optional(Usd),
    cache_write: Type.Optional(Usd),
  },
  strict,
)
/** What the request log keeps of bodies (`[request_log] bodies`, per tier too). */
const BodyMode = Type.Union([Type.Literal('off'), Type.Literal('errors'), Type.Literal('all')])

/** USD per UTC day or month: at most a million, so that it is exact in nano-dollars. */
const Budget = Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000 })

const TierSchema = Type.Object(
  {
    requests_per_minute: PositiveInt,
    tokens_per_minute: PositiveInt,
    max_concurrent: PositiveInt,
    monthly_token_quota: Type.Optional(PositiveInt),
    daily_request_quota: Type.Optional(PositiveInt),
    daily_budget_usd: Type.Optional(Budget),
    monthly_budget_usd: Type.Optional(Budget),
    models: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    request_log: Type.Optional(Type.Object({ bodies: Type.Optional(BodyMode) }, strict)),
  },
  strict,
)

/** Dotted paths into a request body: member names, `*` for any member or element. */
const RedactPath = Type.String({ pattern: '^(?:[A-Za-z0-9_$-]+|\\*)(?:\\.(?:[A-Za-z0-9_$-]+|\\*))*$' })

const RequestLogSchema = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean()),
    bodies: Type.Optional(BodyMode),
    max_body_bytes: Type.Optional(Type.Integer({ minimum: 256, maximum: 16 * 1024 * 1024 })),
    redact: Type.Optional(Type.Array(RedactPath, { maxItems: 256 })),
    retention_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 3660 })),
  },
  strict,
)

const UpstreamSchema = Type.Object(
  {
    kind: Type.String(),
    base_url: Type.Optional(Type.String({ pattern: '^https?://' })),
    api_key_env: Type.Optional(EnvName),
    timeout_ms: Type.Optional(Millis),
    connect_timeout_ms: Type.Optional(Millis),
    max_retries: Type.Optional(Type.Integer({ minimum: 0, maximum: 10 })),
    failure_threshold: Type.Optional(PositiveInt),
    cooldown_ms: Type.Optional(Millis),
    max_reasoning_effort: Type.Optional(Type.Union(REASONING_EFFORTS.map((effort) => Type.Literal(effort)))),
    mid_system: Type.Optional(Type.Union(MID_SYSTEM_MODES.map((mode) => Type.Literal(mode)))),
    responses: Type.Optional(Type.Union([Type.Literal('native'), Type.Literal('translate')])),
    // Fields of some kinds only (each kind says which it takes): Vertex AI, Bedrock, Azure OpenAI.
    project: Type.Optional(Type.String({ minLength: 1 })),
    location: Type.Optional(Type.String({ pattern: '^[a-z0-9-]+$' })),
    credentials_file_env: Type.Optional(EnvName),
    region: Type.Optional(Type.String({ pattern: '^[a-z0-9-]+$' })),
    access_key_id_env: Type.Optional(EnvName),
    secret_access_key_env: Type.Optional(EnvName),
    session_token_env: Type.Optional(EnvName),
    endpoint: Type.Optional(Type.String({ pattern: '^https?://' })),
    api_version: Type.Optional(Type.String({ pattern: '^[0-9A-Za-z._-]+$' })),
  },
  strict,
)

const TargetSchema = Type.Object(
  {
    upstream: Type.String({ minLength: 1 }),
    model: Type.String({ minLength: 1 }),
    weight: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
    price: Type.Optional(PriceSchema),
    // The provider account's own limits for this upstream and model: requests and tokens per minute.
    rpm: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000_000 })),
    tpm: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000_000 })),
  },
  strict,
)

/** An alias's exact response cache (src/cache/): off unless set. */
const AliasCacheSchema = Type.Object(
  {
    ttl_s: Type.Integer({ minimum: 1, maximum: 30 * 86_400 }),
    scope: Type.Optional(Type.Union([Type.Literal('key'), Type.Literal('tier'), Type.Literal('alias')])),
    tool_calls: Type.Optional(Type.Boolean()),
  },
  strict,
)

const AliasSchema = Type.Object(
  {
    strategy: Type.Optional(Type.String()),
    cache: Type.Optional(AliasCacheSchema),
    targets: Type.Array(TargetSchema, { minItems: 1 }),
    hosted_tools: Type.Optional(Type.Union([Type.Literal('drop'), Type.Literal('refuse')])),
  },
  strict,
)

export const ConfigFileSchema = Type.Object(
  {
    tiers: Type.Optional(Type.Record(Type.String(), TierSchema)),
    upstreams: Type.Optional(Type.Record(Type.String(), UpstreamSchema)),
    aliases: Type.Optional(Type.Record(Type.String(), AliasSchema)),
    prices: Type.Optional(Type.Record(Type.String(), PriceSchema)),
    routing: Type.Optional(
      Type.Object({ deadline_ms: Type.Optional(Millis), drain_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 600_000 })) }, strict),
    ),
    http: Type.Optional(Type.Object({ max_upstream_connections: Type.Optional(Type.Integer({ minimum: 1, maximum: 65_279 })) }, strict)),
    usage: Type.Optional(Type.Object({ minute_retention_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 366 })) }, strict)),
    conversations: Type.Optional(Type.Object({ responses_ttl_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 3660 })) }, strict)),
    request_log: Type.Optional(RequestLogSchema),
    cache: Type.Optional(
      Type.Object(
        {
          max_entries: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000 })),
          max_entry_bytes: Type.Optional(Type.Integer({ minimum: 1, maximum: 64 * 1024 * 1024 })),
        },
        strict,
      ),
    ),
  },
  strict,
)

export type ConfigFile = Static<typeof ConfigFileSchema>

export const ALIAS_PATTERN = /^[a-z0-9][a-z0-9_-]*\/[A-Za-z0-9][A-Za-z0-9._:\/-]*$/
export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/
