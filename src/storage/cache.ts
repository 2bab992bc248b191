import { MemoryCacheStore, type ResponseCacheStore } from '../cache/store'
import type { GatewayEnv } from '../config/env'
import type { CacheSettings } from '../config/types'
import type { Logger } from '../log'
import { openSqliteCache } from './sqlite/cache'

/**
 * Where this instance keeps cached answers: Redis when instances share it (one cache for all), else
 * the database (SQLite's file, or Postgres), so it survives a restart; memory for an in-memory database.
 */
export async function openCacheStore(env: GatewayEnv, settings: CacheSettings, log: Logger, now: number): Promise<ResponseCacheStore> {
  const { maxEntries, maxEntryBytes } = settings
  if (env.redisUrl !== null) {
    const { RedisCacheStore } = await import('./redis/cache')
    return new RedisCacheStore(env.redisUrl, env.redisTimeoutMs, maxEntries, maxEntryBytes, log)
  }
  if (env.databaseUrl !== null) {
    const { openPgCache } = await import('./postgres/cache')
    return openPgCache(env.databaseUrl, maxEntries, maxEntryBytes, now)
  }
  if (env.dbPath !== ':memory:') return openSqliteCache(env.dbPath, maxEntries, maxEntryBytes, now)
  return new MemoryCacheStore(maxEntries, maxEntryBytes)
}
