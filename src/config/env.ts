import { existsSync } from 'node:fs'
import { invalidConfig } from '../errors'
import type { LogLevel } from './types'

/** Everything the process reads from its environment, validated once at start. */
export interface GatewayEnv {
  port: number
  host: string
  dbPath: string
  /** null: no file, the built-in defaults apply. */
  configPath: string | null
  headerBrand: string
  adminKey: string | null
  logLevel: LogLevel
  maxBodyBytes: number
  /** Deepest nesting of `[` and `{` a JSON request body may have; checked before it is parsed. */
  maxJsonDepth: number
  /** How long a request body may take to arrive, once its headers are in. */
  bodyTimeoutMs: number
  /** Seconds an idle keep-alive connection stays open. */
  idleTimeoutSeconds: number
  /** Largest single upstream SSE event (characters), and largest upstream JSON body (bytes). */
  maxSseEventBytes: number
  maxUpstreamBodyBytes: number
  metricsKey: string | null
  /** Signs and seals what the gateway hands callers to send back (thinking it signed); null: a file beside the database. */
  secret: string | null
  logBodies: boolean
  /** Postgres for keys, config and usage, shared by several instances; null: SQLite (GATEWAY_DB). */
  databaseUrl: string | null
  /** Redis for limits, budgets and the usage stream, shared by several instances; null: in memory. */
  redisUrl: string | null
  /** The longest one Redis call may take before the request is refused with 503. */
  redisTimeoutMs: number
  /** Connections each instance keeps to Postgres. */
  pgPoolSize: number
  /** Whether to LISTEN for other instances' writes (off behind poolers that cannot, e.g. PgBouncer in transaction mode). */
  pgListen: boolean
  /** The whole environment, for upstream secrets named by `api_key_env`. */
  vars: Readonly<Record<string, string | undefined>>
}

const DEFAULT_CONFIG_FILE = './gateway.toml'

const invalid = (name: string, message: string) => invalidConfig(`Invalid environment variable ${name}: ${message}`, name)

function integerVar(vars: Record<string, string | undefined>, name: string, fallback: number, min: number, max: number): number {
  const raw = vars[name]
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw)) throw invalid(name, `expected a whole number, got "${raw}"`)
  const value = Number(raw)
  if (value < min || value > max) throw invalid(name, `expected ${min} to ${max}, got ${value}`)
  return value
}

function secretVar(vars: Record<string, string | undefined>, name: string, minLength = 16): string | null {
  const raw = vars[name]
  if (raw === undefined || raw === '') return null
  if (raw.length < minLength) throw invalid(name, `must be at least ${minLength} characters long`)
  return raw
}

/** A connection URL with one of the given schemes; its credentials never appear in the error. */
function urlVar(vars: Record<string, string | undefined>, name: string, schemes: string[]): string | null {
  const raw = vars[name]
  if (raw === undefined || raw === '') return null
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw invalid(name, `expected a URL like ${schemes[0]}//host:port/..., got something else`)
  }
  if (!schemes.includes(url.protocol)) throw invalid(name, `expected a ${schemes.map((s) => `${s}//`).join(' or ')} URL, got ${url.protocol}//`)
  return raw
}

export function readEnv(vars: Record<string, string | undefined> = process.env): GatewayEnv {
  const logLevel = vars.LOG_LEVEL || 'info'
  if (!['debug', 'info', 'warn', 'error'].includes(logLevel)) {
    throw invalid('LOG_LEVEL', `expected one of debug, info, warn, error, got "${logLevel}"`)
  }
  const headerBrand = vars.GATEWAY_HEADER_BRAND || 'svc'
  if (!/^[a-z0-9][a-z0-9-]{0,31}$/.test(headerBrand)) {
    throw invalid('GATEWAY_HEADER_BRAND', `expected lowercase letters, digits and dashes, got "${headerBrand}"`)
  }
  const logBodies = vars.GATEWAY_LOG_BODIES || '0'
  if (logBodies !== '0' && logBodies !== '1') throw invalid('GATEWAY_LOG_BODIES', `expected 0 or 1, got "${logBodies}"`)

  let configPath: string | null = vars.GATEWAY_CONFIG || null
  if (configPath === null && existsSync(DEFAULT_CONFIG_FILE)) configPath = DEFAULT_CONFIG_FILE
  if (configPath !== null && !existsSync(configPath)) throw invalid('GATEWAY_CONFIG', `file not found: ${configPath}`)

  const databaseUrl = urlVar(vars, 'DATABASE_URL', ['postgres:', 'postgresql:'])
  const redisUrl = urlVar(vars, 'REDIS_URL', ['redis:', 'rediss:'])
  if (redisUrl !== null && databaseUrl === null) {
    throw invalid('REDIS_URL', 'several instances share their keys, config and usage in Postgres: set DATABASE_URL too')
  }
  const pgListen = vars.GATEWAY_PG_LISTEN || '1'
  if (pgListen !== '0' && pgListen !== '1') throw invalid('GATEWAY_PG_LISTEN', `expected 0 or 1, got "${pgListen}"`)

  return {
    port: integerVar(vars, 'PORT', 8080, 0, 65535),
    host: vars.HOST || '127.0.0.1',
    dbPath: vars.GATEWAY_DB || './data/gateway.sqlite',
    configPath,
    headerBrand,
    adminKey: secretVar(vars, 'GATEWAY_ADMIN_KEY'),
    logLevel: logLevel as LogLevel,
    maxBodyBytes: integerVar(vars, 'GATEWAY_MAX_BODY_BYTES', 1_048_576, 1024, 1_073_741_824),
    maxJsonDepth: integerVar(vars, 'GATEWAY_MAX_JSON_DEPTH', 64, 4, 1024),
    bodyTimeoutMs: integerVar(vars, 'GATEWAY_BODY_TIMEOUT_MS', 30_000, 100, 600_000),
    idleTimeoutSeconds: integerVar(vars, 'GATEWAY_IDLE_TIMEOUT_S', 30, 1, 255),
    maxSseEventBytes: integerVar(vars, 'GATEWAY_MAX_SSE_EVENT_BYTES', 1_048_576, 1024, 268_435_456),
    maxUpstreamBodyBytes: integerVar(vars, 'GATEWAY_MAX_UPSTREAM_BODY_BYTES', 33_554_432, 1024, 1_073_741_824),
    metricsKey: secretVar(vars, 'GATEWAY_METRICS_KEY'),
    secret: secretVar(vars, 'GATEWAY_SECRET', 32),
    logBodies: logBodies === '1',
    databaseUrl,
    redisUrl,
    redisTimeoutMs: integerVar(vars, 'GATEWAY_REDIS_TIMEOUT_MS', 500, 10, 10_000),
    pgPoolSize: integerVar(vars, 'GATEWAY_PG_POOL_SIZE', 10, 1, 100),
    pgListen: pgListen === '1',
    vars,
  }
}
