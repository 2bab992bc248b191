import { overloaded } from '../errors'

/** Bun reads BUN_CONFIG_MAX_HTTP_REQUESTS as a 16-bit number: its cap on concurrent fetches goes no higher. */
export const RUNTIME_FETCH_CAP_MAX = 65_535
/**
 * Fetches the runtime may have open beyond the bound: an aborted attempt gives its slot back here at
 * once, while the runtime closes its socket a moment later on its own thread.
 */
const FETCH_CAP_HEADROOM = 256
/** The highest bound an instance can keep without requests waiting in the runtime's own queue. */
export const MAX_UPSTREAM_CONNECTIONS = RUNTIME_FETCH_CAP_MAX - FETCH_CAP_HEADROOM

/** The runtime's cap on concurrent fetch calls (BUN_CONFIG_MAX_HTTP_REQUESTS) that a bound of `limit` needs. */
export const runtimeFetchCap = (limit: number): number => Math.min(RUNTIME_FETCH_CAP_MAX, Math.min(limit, MAX_UPSTREAM_CONNECTIONS) + FETCH_CAP_HEADROOM)

/**
 * The upstream requests one instance may have open at once (`[http] max_upstream_connections`). A
 * request over it is refused at once with 503, rather than queued behind the runtime's own cap on
 * concurrent fetches until its connect timeout fails it.
 */
export class UpstreamConnections {
  private open = 0
  /** The bound in force: the configured one, within what the runtime's cap can hold. */
  readonly limit: number

  constructor(configured: number) {
    this.limit = Math.min(configured, MAX_UPSTREAM_CONNECTIONS)
  }

  /** How many upstream requests are open now. */
  get inUse(): number {
    return this.open
  }

  /** Takes a connection, or throws the 503 when every one is in use. Give it back with `release`. */
  acquire(): void {
    if (this.open >= this.limit) {
      throw overloaded(`This instance has ${this.limit} upstream requests open, its limit ([http] max_upstream_connections); retry in 1 s`, {
        code: 'upstream_connection_limit',
        retryAfterSeconds: 1,
      })
    }
    this.open++
  }

  release(): void {
    this.open--
  }
}
