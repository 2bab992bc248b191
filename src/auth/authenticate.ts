import { unauthorized } from '../errors'
import type { KeyLimits } from '../limits/limiter'
import type { RoutingTable, Tier } from '../routing/table'
import type { KeyCache } from './key-cache'
import { hashApiKey, type KeyRecord } from './keys'

/** An authenticated caller: its key, its tier and the limits in force for it. */
export interface Caller {
  key: KeyRecord
  tier: Tier
  limits: KeyLimits
}

const BEARER = /^Bearer\s+(\S+)\s*$/i

/**
 * The caller's key from `Authorization: Bearer`, `x-api-key` or `x-goog-api-key` (Google's clients:
 * Gemini CLI, the GenAI SDK), in that order of precedence when several are sent. Keys in query
 * strings are never read: they end up in access logs. Reads the request's own headers: asking
 * Elysia for its `headers` object would copy every header on every request.
 */
export function extractApiKey(headers: Headers): string | null {
  const authorization = headers.get('authorization')
  if (authorization !== null) return BEARER.exec(authorization)?.[1] ?? null
  return headers.get('x-api-key')?.trim() || headers.get('x-goog-api-key')?.trim() || null
}

export function limitsOf(key: KeyRecord, tier: Tier): KeyLimits {
  return {
    requestsPerMinute: key.requestsPerMinute ?? tier.requestsPerMinute,
    tokensPerMinute: key.tokensPerMinute ?? tier.tokensPerMinute,
    maxConcurrent: key.maxConcurrent ?? tier.maxConcurrent,
    dailyRequestQuota: key.dailyRequestQuota ?? tier.dailyRequestQuota,
    monthlyTokenQuota: key.monthlyTokenQuota ?? tier.monthlyTokenQuota,
    dailyBudgetNanos: key.dailyBudgetNanos ?? tier.dailyBudgetNanos,
    monthlyBudgetNanos: key.monthlyBudgetNanos ?? tier.monthlyBudgetNanos,
  }
}

/** The caller a key record stands for at `now`; missing, revoked, expired or tierless keys all get the same 401. */
function callerOf(key: KeyRecord | undefined, routing: RoutingTable, now: number): Caller {
  if (!key || key.revokedAt !== null || (key.expiresAt !== null && key.expiresAt <= now)) throw unauthorized()
  const tier = routing.tiers.get(key.tier)
  if (!tier) throw unauthorized()
  return { key, tier, limits: limitsOf(key, tier) }
}

/**
 * Missing, unknown, revoked, expired or tierless keys all get the same 401: the body never says
 * which. A key the cache holds is answered at once; an unknown one once the cache checked the store.
 */
export function authenticate(apiKey: string | null, keys: KeyCache, routing: RoutingTable, now: number): Caller | Promise<Caller> {
  if (apiKey === null) throw unauthorized()
  const found = keys.find(hashApiKey(apiKey))
  return found instanceof Promise ? found.then((key) => callerOf(key, routing, now)) : callerOf(found, routing, now)
}
