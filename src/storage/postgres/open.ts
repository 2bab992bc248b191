import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js'
import { migrate } from 'drizzle-orm/postgres-js/migrator'
import postgres from 'postgres'
import * as schema from '../../../db/pg/schema'
import { GatewayError, overloaded } from '../../errors'
import { fromRoot } from '../../root'

/** Drizzle over postgres.js; `$client` is the pool, for LISTEN and the few statements Drizzle cannot express. */
export type PgDb = PostgresJsDatabase<typeof schema> & { $client: postgres.Sql }
/** The database or a transaction on it. */
export type PgTx = Parameters<Parameters<PgDb['transaction']>[0]>[0]

export interface PostgresDatabase {
  db: PgDb
  sql: postgres.Sql
  close(): Promise<void>
}

const MIGRATIONS = fromRoot('db/pg/migrations')

/**
 * Advisory lock keys (pg_advisory_lock(space, key)): migrations, config sync and the first key are
 * each done by one instance at a time, so instances starting together never race on them.
 */
export const LOCK_SPACE = 0x63676174 // "cgat"
export const LOCK_MIGRATIONS = 1
export const LOCK_CONFIG = 2
export const LOCK_FIRST_KEY = 3

/** The channel on which writes to keys and config are announced (payload "keys" or "config"). */
export const CHANGES_CHANNEL = 'chatgate_changes'

/** postgres.js error codes of a database that cannot be reached, as opposed to a query it refused. */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
])
/** Postgres's own codes for a server shutting down or starting up (class 57P). */
const SHUTTING_DOWN = /^57P0[1-4]$/

/**
 * Whether an error says the database is out of reach (down, restarting, network) rather than a bug.
 * Drizzle wraps the driver's error in its own (`cause`), so the whole chain is looked at.
 */
export function isUnreachable(error: unknown): boolean {
  for (let link = error, depth = 0; link !== null && typeof link === 'object' && depth < 5; link = (link as { cause?: unknown }).cause, depth++) {
    const code = (link as { code?: unknown }).code
    if (typeof code === 'string' && (UNREACHABLE.has(code) || SHUTTING_DOWN.test(code))) return true
  }
  return false
}

/**
 * Runs a store operation; a database out of reach becomes a 503 `database_unavailable` that names
 * no address, instead of an anonymous 500. Other errors pass as they are.
 */
export async function guarded<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation()
  } catch (error) {
    if (error instanceof GatewayError || !isUnreachable(error)) throw error
    throw overloaded('The database is unavailable; try again shortly.', { code: 'database_unavailable', retryAfterSeconds: 1 })
  }
}

export interface PostgresOptions {
  /** Shown in pg_stat_activity, so an operator can tell the instances' sessions apart. */
  applicationName: string
  /** Connections in the pool. */
  poolSize: number
}

/**
 * Connects to Postgres (postgres.js) and applies pending migrations, holding an advisory lock while
 * it does: of several instances starting together, one migrates and the others wait, then find
 * nothing left to do.
 */
export async function openPostgres(url: string, options: PostgresOptions): Promise<PostgresDatabase> {
  const sql = postgres(url, {
    max: options.poolSize,
    connect_timeout: 5,
    idle_timeout: 60,
    onnotice: () => {},
    connection: {
      application_name: options.applicationName,
      // A frozen or cut-off instance must not hold a lock for long: a fold waiting on a lock gives up
      // (and is retried a second later), and a transaction left idle is ended by the server.
      statement_timeout: 30_000,
      lock_timeout: 10_000,
      idle_in_transaction_session_timeout: 30_000,
    },
  })
  const db = drizzle(sql, { schema }) as PgDb
  // The lock is held on a connection of its own, so the pool stays free for the migrations, whatever its size.
  const locker = postgres(url, { max: 1, connect_timeout: 5, onnotice: () => {}, connection: { application_name: options.applicationName } })
  try {
    await locker`SELECT pg_advisory_lock(${LOCK_SPACE}, ${LOCK_MIGRATIONS})`
    await migrate(db, { migrationsFolder: MIGRATIONS })
  } catch (error) {
    await sql.end({ timeout: 1 })
    throw error
  } finally {
    // Ending the session releases its advisory lock.
    await locker.end({ timeout: 1 })
  }
  return { db, sql, close: () => sql.end({ timeout: 5 }) }
}
