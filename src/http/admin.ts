import { timingSafeEqual } from 'node:crypto'
import { Elysia } from 'elysia'
import { extractApiKey } from '../auth/authenticate'
import { rateLimited, unauthorized } from '../errors'
import type { Gateway } from '../gateway'
import { atMostEvery } from '../log'
import { ADMIN_THROTTLE, addressKey, FailureThrottle } from './admin-throttle'
import { acceptBody } from './body'
import { defineRoute, type RouteFactory } from './route'

/** OpenAPI security requirement for admin routes. */
export const ADMIN_SECURITY: Record<string, string[]>[] = [{ adminBearer: [] }, { adminApiKey: [] }]

const digest = (value: string) => new Bun.CryptoHasher('sha256').update(value).digest()

/** Whether `offered` is `secret`, compared in constant time. */
export function secretMatches(offered: string | null, secret: string): boolean {
  return offered !== null && timingSafeEqual(digest(offered), digest(secret))
}

/** One throttle per gateway, shared by every admin route: a guesser cannot spread over paths. */
const throttles = new WeakMap<Gateway, { throttle: FailureThrottle; mayLog: () => boolean }>()

function throttleOf(gateway: Gateway) {
  let found = throttles.get(gateway)
  if (!found) throttles.set(gateway, (found = { throttle: new FailureThrottle({ ...ADMIN_THROTTLE, now: gateway.now }), mayLog: atMostEvery(10_000) }))
  return found
}

/**
 * A wrong admin key: 401 within the address's allowance, else 429 with Retry-After. Only an offered
 * key is a guess; a request without one is a plain 401 and costs nothing.
 */
function refuse(gateway: Gateway, request: Request, offered: string | null): never {
  if (offered === null && !request.headers.has('authorization')) throw unauthorized()
  const { throttle, mayLog } = throttleOf(gateway)
  const address = addressKey(gateway.clientAddress(request))
  const waitSeconds = throttle.fail(address)
  if (waitSeconds === 0) throw unauthorized()
  // A guesser must not flood the log: one line per 10 s at most.
  if (mayLog()) gateway.log.warn({ address, retry_after_s: waitSeconds }, 'admin authentication failures throttled: wrong admin keys get 429 for a while')
  throw rateLimited('Too many failed admin authentications from this address; retry later', { code: 'admin_auth_throttled', retryAfterSeconds: waitSeconds })
}

/**
 * Admin routes take the admin key only (Bearer or x-api-key); a caller key is just a wrong key here.
 * Wrong keys are throttled per client address (src/http/admin-throttle.ts); the right key always
 * passes, from any address, throttled or not.
 */
export function adminAuth(gateway: Gateway) {
  // A derive runs before body validation: without the admin key, nothing about the body is revealed.
  return new Elysia().derive({ as: 'scoped' }, function requireAdminKey({ request, body, set }) {
    // Admin answers (one of them shows a new key) are never cached, refusals included.
    set.headers['cache-control'] = 'no-store'
    const offered = extractApiKey(request.headers)
    if (!secretMatches(offered, gateway.env.adminKey ?? '')) refuse(gateway, request, offered)
    acceptBody(body)
    return {}
  })
}

/** An admin route file: mounted only when GATEWAY_ADMIN_KEY is set, so otherwise its path is a plain 404. */
export const defineAdminRoute = (factory: RouteFactory): RouteFactory =>
  defineRoute((gateway) => (gateway.env.adminKey === null ? new Elysia() : factory(gateway)))
