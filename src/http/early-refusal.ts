import { extractApiKey, limitsOf } from '../auth/authenticate'
import type { KeyCache } from '../auth/key-cache'
import { hashApiKey } from '../auth/keys'
import type { GatewayError } from '../errors'
import type { Limiter } from '../limits/limiter'
import { refusalFor } from '../limits/refusals'
import type { RoutingTable } from '../routing/table'

/** Bodies at least this large are not read for a key whose request window is already full. */
export const EARLY_REFUSAL_MIN_BYTES = 64 * 1024

export interface EarlyRefusalDeps {
  keyCache: KeyCache
  routing(): RoutingTable
  limiter: Limiter
  now(): number
  /** Counts a refusal (the refusal metric). */
  refused(): void
}

/**
 * The 429 for a large request from a key whose request window is full, decided from its headers
 * alone, before its body is read: a key refused anyway must not make the gateway read and parse
 * megabytes first, which stalls every other caller. Small bodies and keys not in the cache go the
 * usual way (authentication first, then the limiter), so this never answers for an unknown key.
 */
export function earlyRefusal(deps: EarlyRefusalDeps): (request: Request) => GatewayError | null {
  return (request) => {
    if (Number(request.headers.get('content-length') ?? 0) < EARLY_REFUSAL_MIN_BYTES) return null
    const apiKey = extractApiKey(request.headers)
    if (apiKey === null) return null
    const key = deps.keyCache.find(hashApiKey(apiKey))
    if (key === undefined || key instanceof Promise || key.revokedAt !== null) return null
    const tier = deps.routing().tiers.get(key.tier)
    if (!tier) return null
    const limits = limitsOf(key, tier)
    const state = deps.limiter.peek(key.id, limits, deps.now())
    if (state.remaining > 0) return null
    deps.refused()
    return refusalFor('requests', limits, state.resetSeconds * 1000).error
  }
}
