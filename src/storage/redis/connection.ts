import { RedisClient } from 'bun'
import { overloaded } from '../../errors'
import type { RedisScript } from './scripts'

/** Redis could not answer in time, or at all: the request that needed it gets a 503. */
export const limiterUnavailable = () =>
  overloaded('The rate limiter (Redis) is unavailable; try again shortly.', { code: 'limiter_unavailable', retryAfterSeconds: 1 })

/** A call that timed out: it may still run on the server later (the caller can compensate). */
export class RedisTimeout extends Error {
  constructor(command: string, ms: number) {
    super(`Redis ${command} did not answer within ${ms} ms`)
  }
}

/** A call that was never sent: there was no connection. Nothing of it can run on the server. */
export class RedisNotSent extends Error {
  constructor(reason: string) {
    super(`Redis is not connected: ${reason}`)
  }
}

/** Fewest milliseconds between two reconnects started here. */
const RECONNECT_EVERY_MS = 200
/** Calls in a row that time out before the connection is taken for dead and replaced. */
const TIMEOUTS_BEFORE_RECONNECT = 3

/**
 * Bun's built-in Redis client behind a small, defensive surface:
 * - every call has a timeout (the client has none of its own);
 * - no offline queue: while Redis is down a call fails at once instead of waiting for it;
 * - reconnects are ours: after a failure a fresh client is connected (at most every 200 ms), rather
 *   than relying on the client's own reconnect loop, which gives up after its retries; a connection
 *   whose calls time out three times in a row (a half-open socket, a Redis that moved) is replaced
 *   too, since the socket may stay "connected" for minutes;
 * - scripts run by EVALSHA, and are sent whole once when Redis answers NOSCRIPT (a restarted or
 *   flushed Redis forgets them).
 */
export class RedisConnection {
  private client: RedisClient
  private connecting: Promise<void> | null = null
  private lastReconnect = 0
  private timeoutsInARow = 0
  private closed = false

  constructor(
    private readonly url: string,
    /** The longest any one call may take. */
    readonly timeoutMs: number,
  ) {
    this.client = this.newClient()
  }

  private newClient(): RedisClient {
    return new RedisClient(this.url, { enableOfflineQueue: false, autoReconnect: false, connectionTimeout: Math.max(this.timeoutMs, 1000) })
  }

  /** Whether the last connection attempt succeeded and the connection is still up. */
  get connected(): boolean {
    return this.client.connected
  }

  /** Connects (or reconnects) now; resolves once connected, rejects when Redis cannot be reached. */
  connect(): Promise<void> {
    if (this.connecting) return this.connecting
    if (this.client.connected) return Promise.resolve()
    this.lastReconnect = performance.now()
    const stale = this.client
    this.client = this.newClient()
    stale.close()
    const connecting = this.client.connect().finally(() => {
      if (this.connecting === connecting) this.connecting = null
    })
    this.connecting = connecting
    return connecting
  }

  /** Drops the connection and connects afresh (a socket that stopped answering). */
  private replace(): void {
    this.timeoutsInARow = 0
    this.client.close()
    this.reconnectSoon()
  }

  /** Starts a reconnect in the background when the connection is down (rate-limited). */
  private reconnectSoon(): void {
    if (this.closed || this.client.connected || this.connecting || performance.now() - this.lastReconnect < RECONNECT_EVERY_MS) return
    this.connect().catch(() => {})
  }

  /** Sends one command; rejects with RedisNotSent without a connection, RedisTimeout past the timeout, or the server's error. */
  async send(command: string, args: string[]): Promise<unknown> {
    if (!this.client.connected) {
      this.reconnectSoon()
      if (!this.connecting) throw new RedisNotSent('reconnecting shortly')
      try {
        await this.withTimeout('connect', this.connecting)
      } catch (error) {
        throw new RedisNotSent((error as Error).message)
      }
    }
    try {
      const reply = await this.withTimeout(command, this.client.send(command, args))
      this.timeoutsInARow = 0
      return reply
    } catch (error) {
      if (error instanceof RedisTimeout && ++this.timeoutsInARow >= TIMEOUTS_BEFORE_RECONNECT) this.replace()
      else if (!this.client.connected) this.reconnectSoon()
      throw error
    }
  }

  /** Runs a script by its SHA; sends it whole when Redis does not know it (NOSCRIPT). */
  async run(script: RedisScript, keys: string[], args: string[]): Promise<unknown> {
    try {
      return await this.send('EVALSHA', [script.sha, String(keys.length), ...keys, ...args])
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error
      return this.send('EVAL', [script.text, String(keys.length), ...keys, ...args])
    }
  }

  private withTimeout<T>(command: string, promise: Promise<T>): Promise<T> {
    let timer: Timer | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new RedisTimeout(command, this.timeoutMs)), this.timeoutMs)
    })
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
  }

  close(): void {
    this.closed = true
    this.client.close()
  }
}
