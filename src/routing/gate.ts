import { type GatewayError, overloaded, rateLimited } from '../errors'
import type { TargetLimiter } from '../limits/targets'
import { type CircuitBreakers, targetKey } from './circuit'
import type { Target } from './table'

/**
 * Why a target was passed over without being asked: at its account's `rpm` or `tpm`, resting after
 * its 429, its circuit open, or (`least_latency`, `least_busy`) ranked behind the one that was asked.
 */
export type SkipReason = 'rpm' | 'tpm' | 'resting' | 'circuit_open' | 'slow'

export interface Skip {
  reason: SkipReason
  /** When the target may be asked again, in ms (0: it may now). */
  waitMs: number
}

/**
 * Whether a target may be asked now, without waiting on anything: null, and its circuit's permission
 * taken (give it back with `circuits.abandon` if the attempt does not go ahead); or why not.
 */
export function closedTarget(target: Target, circuits: CircuitBreakers, limiter: TargetLimiter | undefined, now: number): Skip | null {
  const key = targetKey(target)
  const resting = limiter?.restingMs(key, now) ?? 0
  if (resting > 0) return { reason: 'resting', waitMs: resting }
  if (!circuits.tryAcquire(key, target.upstream, now)) return { reason: 'circuit_open', waitMs: circuits.retryInMs(key, target.upstream, now) }
  return null
}

/**
 * Counts the attempt against its account's rpm, or says which limit refuses it; the circuit's
 * permission is given back on a refusal (and when the limiter cannot answer: its error goes on).
 */
export async function overLimit(target: Target, circuits: CircuitBreakers, limiter: TargetLimiter, now: number): Promise<Skip | null> {
  const key = targetKey(target)
  try {
    const admission = await limiter.admit(key, target.limits!, now)
    if (admission.ok) return null
    circuits.abandon(key)
    return { reason: admission.reason, waitMs: admission.retryMs }
  } catch (error) {
    circuits.abandon(key)
    throw error
  }
}

/** Every target was passed over: what the caller is told, and when to come back. */
export function everyTargetSkipped(alias: string, skips: readonly Skip[]): GatewayError {
  const waitMs = skips.length === 0 ? 1000 : Math.min(...skips.map((s) => s.waitMs))
  const retryAfter = Math.max(1, Math.ceil(waitMs / 1000))
  if (skips.some((s) => s.reason !== 'circuit_open')) {
    return rateLimited(`Every target of "${alias}" is at its provider's limit or resting after a 429; retry in ${retryAfter} s`, {
      code: 'upstream_capacity',
      retryAfterSeconds: retryAfter,
    })
  }
  return overloaded(`Every target of "${alias}" is unavailable (circuit open); retry in ${retryAfter} s`, {
    code: 'circuit_open',
    retryAfterSeconds: retryAfter,
  })
}
