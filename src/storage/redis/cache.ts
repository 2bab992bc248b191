import type { CachedAnswer, ResponseCacheStore } from '../../cache/store'
import type { Logger } from '../../log'
import { atMostEvery } from '../../log'
import { RedisConnection } from './connection'
import { script } from './scripts'

const PREFIX = 'cg:cache:'
const INDEX = 'cg:cache-index'
const PUT = script('cache-put', { prelude: false })

/**
 * The response cache in Redis, shared by every instance of a cluster: an answer made on one is a
 * hit on the others. Each entry is one string with Redis's own expiry; a sorted set by creation
 * time bounds their number (cache-put.lua, atomic). A lookup is one GET; Redis out of reach is a
 * miss, and an answer it cannot take is not kept: the cache never fails a request.
 */
export class RedisCacheStore implements ResponseCacheStore {
  private readonly redis: RedisConnection
  private readonly mayLog = atMostEvery(10_000)

  constructor(
    url: string,
    timeoutMs: number,
    private readonly maxEntries: number,
    private readonly maxEntryBytes: number,
    private readonly log: Logger,
  ) {
    this.redis = new RedisConnection(url, timeoutMs)
    this.redis.connect().catch(() => {})
  }

  async get(key: string, now: number): Promise<CachedAnswer | null> {
    try {
      const text = (await this.redis.send('GET', [PREFIX + key])) as string | null
      if (text === null) return null
      const answer = JSON.parse(text) as CachedAnswer
      return answer.expiresAt > now ? answer : null
    } catch (error) {
      this.failed(error)
      return null
    }
  }

  put(key: string, answer: CachedAnswer): void {
    if (Buffer.byteLength(answer.body) > this.maxEntryBytes) return
    const ttl = Math.max(1, answer.expiresAt - answer.createdAt)
    const args = [JSON.stringify(answer), String(ttl), String(answer.createdAt), String(this.maxEntries)]
    this.redis.run(PUT, [PREFIX + key, INDEX], args).catch((error: unknown) => this.failed(error))
  }

  private failed(error: unknown): void {
    if (this.mayLog()) this.log.warn({ reason: (error as Error).message }, 'the response cache (Redis) failed: requests go to their upstreams meanwhile')
  }

  close(): void {
    this.redis.close()
  }
}
