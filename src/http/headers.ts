import type { LimitState } from '../limits/limiter'

/** Response header names carrying the configurable brand (`x-svc-*` by default). */
export interface HeaderNames {
  tier: string
  model: string
  upstream: string
  latency: string
  attempts: string
  /** A JSON answer's exact cost in USD. */
  cost: string
  /** The hints of the request the target could not use and did not get, comma-separated. */
  dropped: string
}

export function headerNames(brand: string): HeaderNames {
  return {
    tier: `x-${brand}-tier`,
    model: `x-${brand}-model`,
    upstream: `x-${brand}-upstream`,
    latency: `x-${brand}-latency-ms`,
    attempts: `x-${brand}-attempts`,
    cost: `x-${brand}-cost-usd`,
    dropped: `x-${brand}-dropped`,
  }
}

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/**
 * Echoes a sane incoming x-request-id, else makes a new one: a time-ordered UUID (version 7), so the
 * request log's index of ids grows at its end rather than at random places (its writes cost about
 * half as much), and ids sort by time.
 */
export const requestIdFor = (incoming: string | null): string => (incoming !== null && SANE_REQUEST_ID.test(incoming) ? incoming : Bun.randomUUIDv7())

/**
 * Moves every header gathered in Elysia's `set.headers` out into a plain object for a Response the
 * handler builds itself. With `set.headers` left empty, Elysia returns that Response as it is
 * instead of copying it into a second one with the headers merged; the conventions plugin then
 * knows the response is complete and adds nothing to it.
 */
export function takeHeaders(headers: Record<string, string | number>): Record<string, string> {
  const taken: Record<string, string> = {}
  for (const name in headers) {
    taken[name] = String(headers[name])
    delete headers[name]
  }
  return taken
}

/** The x-ratelimit-* headers for a key's allowance. */
export function setRateLimitHeaders(headers: Record<string, string | number>, state: LimitState): void {
  headers['x-ratelimit-limit'] = String(state.limit)
  headers['x-ratelimit-remaining'] = String(state.remaining)
  headers['x-ratelimit-reset'] = String(state.resetSeconds)
  headers['x-ratelimit-limit-tokens'] = String(state.tokenLimit)
  headers['x-ratelimit-remaining-tokens'] = String(state.tokensRemaining)
}
