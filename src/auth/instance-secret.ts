import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { GatewayEnv } from '../config/env'
import type { Logger } from '../log'

/** The file that keeps the secret when GATEWAY_SECRET is not set, beside the SQLite database. */
export const SECRET_FILE = 'chatgate.secret'

/**
 * The secret that signs what the gateway gives callers to send back (thinking it made from another
 * dialect's reasoning): GATEWAY_SECRET, else a random one kept in a file beside the database (made
 * once, owner-only, so it survives restarts), else, for an in-memory database, one per process.
 * Several instances must share it: with DATABASE_URL and no GATEWAY_SECRET, each instance's own file
 * is used and a warning says what breaks.
 */
export function instanceSecret(env: GatewayEnv, log: Logger): string {
  if (env.secret !== null) return env.secret
  if (env.dbPath === ':memory:') return randomBytes(32).toString('base64url')
  const path = join(dirname(env.dbPath), SECRET_FILE)
  if (env.databaseUrl !== null) {
    log.warn(
      { file: path },
      'GATEWAY_SECRET is not set: this instance signs with a secret of its own, so thinking one instance signed is not trusted by the others. Set the same GATEWAY_SECRET on every instance.',
    )
  }
  try {
    return readFileSync(path, 'utf8').trim()
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  const secret = randomBytes(32).toString('base64url')
  try {
    // 'wx': a process starting at the same moment may have written it first; then its secret is the one.
    writeFileSync(path, secret, { mode: 0o600, flag: 'wx' })
    return secret
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    return readFileSync(path, 'utf8').trim()
  }
}
