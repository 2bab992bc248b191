import type { CacheScope } from '../config/types'

/** Request members that never change an answer: the answer's form (`stream`, `stream_options`) and the caller's own labels. */
const IGNORED = new Set(['stream', 'stream_options', 'user', 'metadata'])

/** A JSON value written with every object's members in name order: one text for every spelling of one request. */
function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null'
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  const record = value as Record<string, unknown>
  const names = Object.keys(record)
    .filter((name) => record[name] !== undefined)
    .sort()
  return `{${names.map((name) => `${JSON.stringify(name)}:${canonical(record[name])}`).join(',')}}`
}

/** Who may read an entry: the scope names the owner, so two owners' entries never share a key. */
export interface CacheOwner {
  keyId: string
  tier: string
}

const ownerOf = (scope: CacheScope, owner: CacheOwner): string => (scope === 'key' ? `key:${owner.keyId}` : scope === 'tier' ? `tier:${owner.tier}` : 'alias')

/**
 * The entry's key: SHA-256 over the inbound API, the alias, the scope's owner and the request body
 * in canonical form without its ignored members. The body is parsed here (only for cached aliases):
 * members in another order, or spaced otherwise, are the same request.
 */
export function cacheKey(api: string, alias: string, scope: CacheScope, owner: CacheOwner, requestText: string): string {
  const body = JSON.parse(requestText) as Record<string, unknown>
  const kept: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(body)) if (!IGNORED.has(name)) kept[name] = value
  const hasher = new Bun.CryptoHasher('sha256')
  hasher.update(`${api}\n${alias}\n${ownerOf(scope, owner)}\n`)
  hasher.update(canonical(kept))
  return hasher.digest('hex')
}
