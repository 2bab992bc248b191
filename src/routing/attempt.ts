import { clientClosed, type GatewayError } from '../errors'
import { upstreamTimeout } from '../providers/errors'
import type { AttemptContext } from '../providers/types'
import type { UpstreamConnections } from './connections'
import type { Target } from './table'

/** One attempt's lifetime: its abort signal (caller disconnect, connect and overall timeouts). */
export interface AttemptScope extends AttemptContext {
  /** Stops the attempt's timers; call once the attempt's response is fully read or has failed. */
  end(): void
  /** Aborts the upstream request. */
  abort(reason: GatewayError): void
  /** From now on the caller's disconnect no longer aborts the attempt (a stream drained for its usage). */
  detachClient(): void
}

/**
 * Starts an attempt on one of the instance's upstream connections, taken here (or refused with the
 * 503 `upstream_connection_limit`) and given back when the attempt ends, exactly once.
 */
export function startAttempt(
  target: Target,
  connections: UpstreamConnections,
  clientSignal: AbortSignal,
  timeoutMs: number,
  connectTimeoutMs: number,
): AttemptScope {
  connections.acquire()
  const controller = new AbortController()
  const name = target.upstream.name
  const onClientAbort = () => controller.abort(clientClosed())
  if (clientSignal.aborted) onClientAbort()
  else clientSignal.addEventListener('abort', onClientAbort, { once: true })
  const overall = setTimeout(() => controller.abort(upstreamTimeout(name, `no complete answer within ${timeoutMs} ms`)), timeoutMs)
  let connect: Timer | null =
    connectTimeoutMs < timeoutMs
      ? setTimeout(() => controller.abort(upstreamTimeout(name, `no response within ${connectTimeoutMs} ms`)), connectTimeoutMs)
      : null
  const responded = () => {
    if (connect) clearTimeout(connect)
    connect = null
  }
  let ended = false
  return {
    signal: controller.signal,
    responded,
    end() {
      if (ended) return
      ended = true
      responded()
      clearTimeout(overall)
      clientSignal.removeEventListener('abort', onClientAbort)
      connections.release()
    },
    abort: (reason) => controller.abort(reason),
    detachClient: () => clientSignal.removeEventListener('abort', onClientAbort),
  }
}
