import type { CacheScope } from '../config/types'

/** Request members that never change an answer: the answer's form (`stream`, `stream_options`) and the caller's own labels. */
const IGNORED = new Set(['stream', 'stream_options', 'user', 'metadata'])

/** A JSON value written with every object's members in name order: one text for every spelling of one request. */
function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null'
  if (Array.isArray(value)) {
    let out = '['
    for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + canonical(value[i] ?? null)
    return out + ']'
  }
  const record = value as Record<string, unknown>
  let out = '{'
  for (const name of Object.keys(record).sort()) {
    const member = record[name]
    if (member === undefined) continue
    out += (out === '{' ? '' : ',') + JSON.stringify(name) + ':' + canonical(member)
  }
  return out + '}'
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
  let kept = '{'
  for (const name of Object.keys(body).sort()) {
    if (IGNORED.has(name) || body[name] === undefined) continue
    kept += (kept === '{' ? '' : ',') + JSON.stringify(name) + ':' + canonical(body[name])
  }
  return Bun.SHA256.hash(`${api}\n${alias}\n${ownerOf(scope, owner)}\n${kept}}`, 'hex')
}
