import { MemoryCacheStore, type ResponseCacheStore } from '../cache/store'
import type { GatewayEnv } from '../config/env'
import type { CacheSettings } from '../config/types'
import type { Logger } from '../log'
import { SqliteCacheStore } from './sqlite/cache'

/**
 * Where this instance keeps cached answers: Redis when instances share it (one cache for all), the
 * SQLite file otherwise (kept across restarts), memory for an in-memory database or Postgres alone.
 */
export async function openCacheStore(env: GatewayEnv, settings: CacheSettings, log: Logger, now: number): Promise<ResponseCacheStore> {
  const { maxEntries, maxEntryBytes } = settings
  if (env.redisUrl !== null) {
    const { RedisCacheStore } = await import('./redis/cache')
    return new RedisCacheStore(env.redisUrl, env.redisTimeoutMs, maxEntries, maxEntryBytes, log)
  }
  if (env.databaseUrl === null && env.dbPath !== ':memory:') return new SqliteCacheStore(env.dbPath, maxEntries, maxEntryBytes, now)
  return new MemoryCacheStore(maxEntries, maxEntryBytes)
}
