import { overloaded } from '../errors'

/**
 * The upstream requests one instance may have open at once (`[http] max_upstream_connections`). A
 * request over it is refused at once with 503, rather than queued behind the runtime's own cap on
 * concurrent fetches until its connect timeout fails it.
 */
export class UpstreamConnections {
  private open = 0

  constructor(readonly limit: number) {}

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
