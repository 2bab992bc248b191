import { Elysia } from 'elysia'
import { authenticate, extractApiKey } from '../auth/authenticate'
import { setRateLimitHeaders } from '../chat/complete'
import type { Gateway } from '../gateway'

/** OpenAPI security requirement for routes that take a caller key. */
export const CALLER_SECURITY: Record<string, string[]>[] = [{ bearerAuth: [] }, { apiKeyHeader: [] }]

/**
 * Authenticates the caller before body validation, so a valid key's tier and rate-limit headers
 * ride on every response to it, errors included.
 */
export function callerAuth(gateway: Gateway) {
  return new Elysia().derive({ as: 'scoped' }, function authenticateCaller({ headers, set }) {
    const now = gateway.now()
    const caller = authenticate(extractApiKey(headers), gateway.keys, gateway.routing, now)
    set.headers[gateway.headers.tier] = caller.tier.name
    setRateLimitHeaders(set.headers, gateway.limiter.peek(caller.key.id, caller.limits, now))
    return { caller }
  })
}
