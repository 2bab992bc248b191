import { GatewayError } from '../errors'
import { UpstreamError, UpstreamTimeoutError } from '../providers/errors'
import type { Alias, Target } from './table'

/** The caller went away: nothing more is owed to it. */
export const clientClosed = () => new GatewayError(499, 'api_error', 'Client closed the request', 'client_closed')

/** One attempt's abort signal, fired by the caller's disconnect or the attempt's timeout. */
export interface AttemptScope {
  signal: AbortSignal
  /** Stops the attempt's timer; call once the attempt's response is fully read or has failed. */
  end(): void
  /** Aborts the upstream request (the caller is gone). */
  abort(reason: GatewayError): void
}

function startAttempt(target: Target, clientSignal: AbortSignal, timeoutMs: number): AttemptScope {
  const controller = new AbortController()
  const onClientAbort = () => controller.abort(clientClosed())
  if (clientSignal.aborted) onClientAbort()
  else clientSignal.addEventListener('abort', onClientAbort, { once: true })
  const timer = setTimeout(() => controller.abort(new UpstreamTimeoutError(target.upstream.name, `no complete answer within ${timeoutMs} ms`)), timeoutMs)
  return {
    signal: controller.signal,
    end() {
      clearTimeout(timer)
      clientSignal.removeEventListener('abort', onClientAbort)
    },
    abort: (reason) => controller.abort(reason),
  }
}

export interface Dispatched<T> {
  target: Target
  value: T
  attempts: number
  scope: AttemptScope
}

export interface DispatchOptions {
  clientSignal: AbortSignal
  /** Called as each attempt starts, so response headers name the target that was tried last. */
  onAttempt(target: Target, attempt: number): void
}

/**
 * Runs `call` against the alias's targets in order until one succeeds. A failure whose scope is
 * `none` (the request itself is bad) ends the search at once; the caller's disconnect too.
 */
export async function dispatch<T>(alias: Alias, options: DispatchOptions, call: (target: Target, signal: AbortSignal) => Promise<T>): Promise<Dispatched<T>> {
  let lastError: GatewayError | undefined
  let attempts = 0
  for (const target of alias.targets) {
    attempts++
    options.onAttempt(target, attempts)
    const scope = startAttempt(target, options.clientSignal, target.upstream.timeoutMs)
    try {
      const value = await call(target, scope.signal)
      return { target, value, attempts, scope }
    } catch (error) {
      scope.end()
      if (options.clientSignal.aborted) throw clientClosed()
      if (!(error instanceof UpstreamError)) throw error
      if (error.retry === 'none') throw error
      lastError = error
    }
  }
  throw lastError ?? new GatewayError(503, 'overloaded_error', `No target can serve "${alias.name}"`)
}
