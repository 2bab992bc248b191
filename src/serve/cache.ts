import type { Caller } from '../auth/authenticate'
import { answerOfStream, callsTools } from '../cache/answer'
import { type CacheDirective, cacheDirective } from '../cache/directive'
import type { CacheKeys } from '../cache/key'
import type { CachedAnswer, ResponseCacheStore } from '../cache/store'
import type { AliasCacheSettings, CacheSettings } from '../config/types'
import { type HeaderNames, setRateLimitHeaders } from '../http/headers'
import type { KeyLimits, Limiter, LimitState } from '../limits/limiter'
import type { GatewayMetrics } from '../observe/metrics'
import { type AnswerNotes, noteAnswer } from '../request-log/answer'
import type { RequestLog } from '../request-log/log'
import type { UsageGate } from '../usage/gate'
import { StreamAnswer } from '../request-log/stream-answer'
import { formatUsd } from '../spend/price'
import type { UsageEntry } from '../usage/entry'
import type { Usage } from '../wire/pivot/types'
import type { Exchange, ServeCall } from './exchange'

/** What the pipeline needs of the response cache: where answers are kept, and the settings in force. */
export interface CacheDeps {
  store: ResponseCacheStore
  keys: CacheKeys
  settings(): CacheSettings
}

/** The usage rows of cache hits name this upstream: no upstream served them (no upstream may be named so). */
export const CACHE_UPSTREAM = '(cache)'

/** What the cache's part of serving uses of ServeDeps (serve.ts). */
interface ServeDeps {
  cache: CacheDeps | null
  headers: HeaderNames
  now: () => number
  limiter: Limiter
  metrics: GatewayMetrics
  usage: UsageGate
  requestLog: RequestLog
}

/** `x-svc-cache`, with the gateway's header brand: the request's directive and the answer's verdict (made once per brand). */
const cacheHeaders = new WeakMap<HeaderNames, string>()
function cacheHeader(names: HeaderNames): string {
  let header = cacheHeaders.get(names)
  if (header === undefined) cacheHeaders.set(names, (header = names.tier.replace(/-tier$/, '-cache')))
  return header
}

/** One request's dealings with the cache: its entry's key, what the caller asked, and the entry when it is a hit. */
export interface CacheTurn {
  key: string
  alias: AliasCacheSettings
  directive: CacheDirective
  hit: CachedAnswer | null
}

/**
 * Looks the request up, for an alias with a cache: null when it has none (nothing is read). An
 * exchange that cannot be cached (a message thread, a stored response) or a caller's bypass is
 * answered `bypass` and keeps nothing; `refresh` reads nothing and replaces the entry.
 */
export async function lookUp(deps: ServeDeps, call: ServeCall, aliasName: string, exchange: Exchange): Promise<CacheTurn | null> {
  const cache = deps.cache
  const alias = cache?.settings().aliases.get(aliasName)
  if (!cache || !alias) return null
  const { record, caller } = call
  const header = cacheHeader(deps.headers)
  const side = exchange.cache
  const directive = side ? cacheDirective(call.requestHeaders?.get(header) ?? null, call.requestHeaders?.get('cache-control') ?? null) : 'bypass'
  if (directive === 'bypass') {
    record.cache = call.headers[header] = 'bypass'
    return null
  }
  const key = cache.keys.keyOf(record.api ?? '', aliasName, alias.scope, { keyId: caller.key.id, tier: caller.tier.name }, side!.request, side!.text)
  const hit = directive === 'use' ? await cache.store.get(key, deps.now()) : null
  record.cache = call.headers[header] = hit ? 'hit' : 'miss'
  return { key, alias, directive, hit }
}

/** Keeps a served answer (JSON text of the inbound API) under the turn's key, unless it calls tools and the alias keeps none. */
export function keepAnswer(deps: ServeDeps, turn: CacheTurn, api: string, body: string, usage: Usage | null, costNanos: number): void {
  try {
    if (!turn.alias.toolCalls && callsTools(api, JSON.parse(body))) return
  } catch {
    return // An answer that is not JSON is served, not kept.
  }
  const now = deps.now()
  deps.cache!.store.put(turn.key, { body, usage, costNanos, createdAt: now, expiresAt: now + turn.alias.ttlMs })
}

/** Puts a streamed answer together as it goes out, to keep it once it ended well. */
export function streamKeeper(deps: ServeDeps, turn: CacheTurn, api: string): { push(text: string): void; keep(usage: Usage | null, costNanos: number): void } {
  const answer = new StreamAnswer(api, Number.MAX_SAFE_INTEGER)
  return {
    push: (text) => answer.push(text),
    keep: (usage, costNanos) =>
      keepAnswer(deps, turn, api, JSON.stringify(answerOfStream(api, JSON.parse(answer.json()) as Record<string, unknown>, usage)), usage, costNanos),
  }
}

/**
 * A hit counts only against the request limits (per minute, concurrency): it is served to a key
 * whose tokens, quotas or budget are spent. It still counts as a request in its day.
 */
const hitLimits = (limits: KeyLimits): KeyLimits => ({
  ...limits,
  tokensPerMinute: Number.MAX_SAFE_INTEGER,
  dailyRequestQuota: null,
  monthlyTokenQuota: null,
  dailyBudgetNanos: null,
  monthlyBudgetNanos: null,
})

/** The token allowance the caller really has, in the state an admission with `hitLimits` reported. */
function realState(state: LimitState, limits: KeyLimits): LimitState {
  const tokens = Number.MAX_SAFE_INTEGER - state.tokensRemaining
  return { ...state, tokenLimit: limits.tokensPerMinute, tokensRemaining: Math.max(0, limits.tokensPerMinute - tokens) }
}

/** The usage entry of a hit: one request, no tokens, no cost, and what it saved. */
const hitEntry = (deps: ServeDeps, caller: Caller, alias: string, start: number, savedNanos: number): UsageEntry => ({
  keyId: caller.key.id,
  alias,
  upstream: CACHE_UPSTREAM,
  error: false,
  promptTokens: 0,
  completionTokens: 0,
  costNanos: 0,
  cacheSavedNanos: savedNanos,
  latencyMs: performance.now() - start,
  at: deps.now(),
})

/** A hit's answer as this request gets it, with what the request log notes of it (its id, its finish reasons). */
type HitAnswer = AnswerNotes & { text: string }

const notedAnswer = (api: string | undefined, text: string): HitAnswer => {
  const answer: HitAnswer = { api, text }
  noteAnswer(answer, text)
  return answer
}

/** Answers already made from a held entry, by variant ('' for the entry's own text): they die with the entry. */
const madeAnswers = new WeakMap<CachedAnswer, Map<string, HitAnswer>>()

/** The answer made from `hit` for `variant`: made (by `make`) and noted the first time, then held with the entry. */
async function madeAnswer(hit: CachedAnswer, variant: string, api: string | undefined, make: () => string | Promise<string>): Promise<HitAnswer> {
  let made = madeAnswers.get(hit)
  if (!made) madeAnswers.set(hit, (made = new Map()))
  let answer = made.get(variant)
  if (answer === undefined) made.set(variant, (answer = notedAnswer(api, await make())))
  return answer
}

/**
 * The hit as this request's own answer (see CacheSide). An answer that depends on the entry alone
 * (the entry's own text, or a stream with a `streamVariant`) is made and noted once per entry.
 */
async function answerOfHit(exchange: Exchange, hit: CachedAnswer, api: string | undefined): Promise<HitAnswer> {
  const { fromCache, streamVariant } = exchange.cache!
  if (!fromCache) return madeAnswer(hit, '', api, () => hit.body)
  const stream = exchange.stream !== null
  if (stream && streamVariant !== undefined) return madeAnswer(hit, streamVariant, api, () => fromCache(hit.body, hit.usage, true))
  const text = await fromCache(hit.body, hit.usage, stream)
  return text === hit.body ? madeAnswer(hit, '', api, () => text) : notedAnswer(api, text)
}

/**
 * Answers from the cache: no upstream call. A streamed request gets the cached answer as its own
 * dialect's stream (the exchange's `fromCache`), with the original usage in its final event. Counted
 * and recorded before it leaves, like any answer.
 */
export async function serveHit(deps: ServeDeps, call: ServeCall, aliasName: string, exchange: Exchange, hit: CachedAnswer): Promise<Response | string> {
  const { caller, record } = call
  const admission = await deps.limiter.admit(caller.key.id, hitLimits(caller.limits), deps.now(), 0)
  setRateLimitHeaders(call.headers, realState(admission.state, caller.limits))
  if (!admission.ok) {
    deps.metrics.refusals.inc(admission.reason)
    throw admission.error
  }
  record.promptTokens = record.completionTokens = record.costNanos = 0
  record.cacheSavedNanos = hit.costNanos
  const answer = await answerOfHit(exchange, hit, record.api)
  record.responseId = answer.responseId
  if (answer.finishReasons) record.finishReasons = [...answer.finishReasons]
  record.responseBody = hit.body
  const settled = admission.settle(hitEntry(deps, caller, aliasName, record.start, hit.costNanos)).catch((failure: unknown) => {
    throw deps.usage.failed(failure)
  })
  await Promise.all([settled, deps.requestLog.settle(record, 200)])
  call.headers.age = String(Math.max(0, Math.floor((deps.now() - hit.createdAt) / 1000)))
  call.headers[deps.headers.cost] = formatUsd(0)
  if (!exchange.stream) {
    call.headers['content-type'] = 'application/json'
  } else {
    // The whole stream in one body: Elysia makes the Response with every header at once.
    call.headers['content-type'] = 'text/event-stream; charset=utf-8'
    call.headers['cache-control'] = 'no-cache'
  }
  return answer.text
}
