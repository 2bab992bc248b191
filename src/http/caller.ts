import { Elysia } from 'elysia'
import { authenticate, extractApiKey } from '../auth/authenticate'
import { unauthorized } from '../errors'
import type { Gateway } from '../gateway'
import { acceptBody, rawBodyOf } from './body'
import { setRateLimitHeaders } from './headers'
import { recordOf } from '../observe/request-record'
import { inboundApi } from '../request-log/apis'

/** OpenAPI security requirement for routes that take a caller key. */
export const CALLER_SECURITY: Record<string, string[]>[] = [{ bearerAuth: [] }, { apiKeyHeader: [] }]

/**
 * Authenticates the caller before anything about the body is reported: a missing or bad key gets
 * 401 whatever the body, and a valid key's tier and rate-limit headers ride on every response to
 * it, its body's 400, 413 and 415 included.
 */
export function callerAuth(gateway: Gateway) {
  // Async: a key the cache does not hold is looked up in the store (Elysia awaits a derive only
  // when it is declared async).
  return new Elysia().derive({ as: 'scoped' }, async function authenticateCaller({ set, request, body, route }) {
    const record = recordOf(request)
    // Known before the key is checked: traces name a refused request by its route too.
    record.route = route
    record.api = inboundApi(route, record.path)
    record.userAgent = request.headers.get('user-agent') ?? undefined
    record.requestBody = rawBodyOf(request)?.text
    const now = gateway.now()
    const apiKey = extractApiKey(request.headers)
    // The admin key is never a caller key, whatever its shape.
    if (apiKey !== null && apiKey === gateway.env.adminKey) throw unauthorized()
    const caller = await authenticate(apiKey, gateway.keyCache, gateway.routing, now)
    record.keyId = caller.key.id
    record.keyPrefix = caller.key.prefix
    record.tier = caller.tier.name
    set.headers[gateway.headers.tier] = caller.tier.name
    setRateLimitHeaders(set.headers, gateway.limiter.peek(caller.key.id, caller.limits, now))
    acceptBody(body)
    return { caller }
  })
}
