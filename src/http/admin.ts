import { timingSafeEqual } from 'node:crypto'
import { Elysia } from 'elysia'
import { extractApiKey } from '../auth/authenticate'
import { unauthorized } from '../errors'
import type { Gateway } from '../gateway'
import { acceptBody } from './body'
import { defineRoute, type RouteFactory } from './route'

/** OpenAPI security requirement for admin routes. */
export const ADMIN_SECURITY: Record<string, string[]>[] = [{ adminBearer: [] }, { adminApiKey: [] }]

const digest = (value: string) => new Bun.CryptoHasher('sha256').update(value).digest()

/** Whether `offered` is `secret`, compared in constant time. */
export function secretMatches(offered: string | null, secret: string): boolean {
  return offered !== null && timingSafeEqual(digest(offered), digest(secret))
}

/** Admin routes take the admin key only (Bearer or x-api-key); a caller key is just a wrong key here. */
export function adminAuth(gateway: Gateway) {
  // A derive runs before body validation: without the admin key, nothing about the body is revealed.
  return new Elysia().derive({ as: 'scoped' }, function requireAdminKey({ request, body, set }) {
    // Admin answers (one of them shows a new key) are never cached, refusals included.
    set.headers['cache-control'] = 'no-store'
    if (!secretMatches(extractApiKey(request.headers), gateway.env.adminKey ?? '')) throw unauthorized()
    acceptBody(body)
    return {}
  })
}

/** An admin route file: mounted only when GATEWAY_ADMIN_KEY is set, so otherwise its path is a plain 404. */
export const defineAdminRoute = (factory: RouteFactory): RouteFactory =>
  defineRoute((gateway) => (gateway.env.adminKey === null ? new Elysia() : factory(gateway)))
