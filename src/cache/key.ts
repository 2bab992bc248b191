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

const keyPrefix = (api: string, alias: string, scope: CacheScope, owner: CacheOwner): string => `${api}\n${alias}\n${ownerOf(scope, owner)}\n`

/**
 * The entry's key: SHA-256 over the inbound API, the alias, the scope's owner (`prefix`) and the
 * request body (parsed; see CacheSide.request) in canonical form without its ignored members:
 * members in another order, or spaced otherwise, are the same request.
 */
const keyFrom = (prefix: string, request: object): string => Bun.SHA256.hash(`${prefix}${canonicalBody(request)}`, 'hex')

/** The body in canonical form, without its ignored members. */
function canonicalBody(request: object): string {
  const body = request as Record<string, unknown>
  let kept = '{'
  for (const name of Object.keys(body).sort()) {
    if (IGNORED.has(name) || body[name] === undefined) continue
    kept += (kept === '{' ? '' : ',') + JSON.stringify(name) + ':' + canonical(body[name])
  }
  return `${kept}}`
}

/** How many characters of request text and keys the recent keys hold at most by default (4 to 8 MB). */
const RECENT_CHARS = 4 * 1024 * 1024

/**
 * Cache keys with the keys of recent requests remembered by their text as sent: a repeat of a
 * request (what a hit is), sent as the same text, gets its key without its body being walked and
 * written out again. `text` must be what `request` was parsed from, unchanged since. Bounded by
 * the characters it holds (each text and its key): past `maxChars` it starts over.
 */
export class CacheKeys {
  private readonly recent = new Map<string, Map<string, string>>()
  private chars = 0

  constructor(private readonly maxChars = RECENT_CHARS) {}

  keyOf(api: string, alias: string, scope: CacheScope, owner: CacheOwner, request: object, text: string | undefined): string {
    const prefix = keyPrefix(api, alias, scope, owner)
    if (text === undefined) return keyFrom(prefix, request)
    let byText = this.recent.get(prefix)
    const known = byText?.get(text)
    if (known !== undefined) return known
    const key = keyFrom(prefix, request)
    const size = text.length + key.length
    if (size > this.maxChars) return key
    if (this.chars + size > this.maxChars) {
      this.recent.clear()
      this.chars = 0
      byText = undefined
    }
    if (!byText) this.recent.set(prefix, (byText = new Map()))
    byText.set(text, key)
    this.chars += size
    return key
  }
}
