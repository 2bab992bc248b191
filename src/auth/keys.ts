import { invalidRequest } from '../errors'
import { usdOrNull } from '../spend/price'

/** A caller key as stored: its SHA-256 hash and visible prefix, never the key itself. */
export interface KeyRecord {
  id: string
  prefix: string
  hash: string
  name: string
  tier: string
  createdAt: number
  expiresAt: number | null
  revokedAt: number | null
  /** Per-key overrides of the tier's limits; null inherits the tier's value. */
  requestsPerMinute: number | null
  tokensPerMinute: number | null
  maxConcurrent: number | null
  monthlyTokenQuota: number | null
  dailyRequestQuota: number | null
  /** Spend budgets in nano-dollars (1e-9 USD); null inherits the tier's. */
  dailyBudgetNanos: number | null
  monthlyBudgetNanos: number | null
}

export const KEY_PREFIX = 'sk-cg-'
const KEY_BODY_LENGTH = 40
const VISIBLE_PREFIX_LENGTH = 12
const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'

/** `sk-cg-` + 40 base62 characters (~238 bits), drawn without modulo bias. */
export function generateApiKey(): string {
  let body = ''
  while (body.length < KEY_BODY_LENGTH) {
    for (const byte of crypto.getRandomValues(new Uint8Array(64))) {
      if (byte < 248 && body.length < KEY_BODY_LENGTH) body += BASE62[byte % 62]
    }
  }
  return KEY_PREFIX + body
}

// Bun's one-shot SHA-256 takes about half the time of a CryptoHasher, on every authenticated request.
export const hashApiKey = (key: string): string => Bun.SHA256.hash(key, 'hex') as string

export const visiblePrefix = (key: string): string => key.slice(0, VISIBLE_PREFIX_LENGTH)

export interface KeyLimitOverrides {
  requestsPerMinute?: number | null
  tokensPerMinute?: number | null
  maxConcurrent?: number | null
  monthlyTokenQuota?: number | null
  dailyRequestQuota?: number | null
  dailyBudgetNanos?: number | null
  monthlyBudgetNanos?: number | null
}

export interface NewKey extends KeyLimitOverrides {
  name: string
  tier: string
  expiresInDays?: number | null
}

/** A change to a key: absent fields stay, `null` clears an override or the expiry. */
export interface KeyPatch extends KeyLimitOverrides {
  name?: string
  tier?: string
  expiresInDays?: number | null
}

/** The longest expiry a key may get: about a hundred years. */
export const MAX_EXPIRES_IN_DAYS = 36_500
/** The largest per-key limit or quota: far above any real one, and exact as a JSON number. */
export const MAX_KEY_LIMIT = 1_000_000_000_000

export const LIMIT_FIELDS = [
  ['requestsPerMinute', 'rpm'],
  ['tokensPerMinute', 'tpm'],
  ['maxConcurrent', 'max_concurrent'],
  ['monthlyTokenQuota', 'monthly_token_quota'],
  ['dailyRequestQuota', 'daily_request_quota'],
] as const

/** The largest budget, in USD: a million dollars a day or month is exact in nano-dollars. */
export const MAX_BUDGET_USD = 1_000_000

export const BUDGET_FIELDS = [
  ['dailyBudgetNanos', 'daily_budget_usd'],
  ['monthlyBudgetNanos', 'monthly_budget_usd'],
] as const

const outOfRange = (param: string, max: number) => invalidRequest(`Invalid request: ${param} must be a whole number from 1 to ${max}`, { param })

/** Checks every number in a new key or a change before anything is written: a refused request writes nothing. */
export function checkNumbers(input: KeyPatch): void {
  const days = input.expiresInDays
  if (days !== undefined && days !== null && !(Number.isInteger(days) && days >= 1 && days <= MAX_EXPIRES_IN_DAYS)) {
    throw outOfRange('expires_in_days', MAX_EXPIRES_IN_DAYS)
  }
  for (const [field, param] of LIMIT_FIELDS) {
    const value = input[field]
    if (value !== undefined && value !== null && !(Number.isInteger(value) && value >= 1 && value <= MAX_KEY_LIMIT)) throw outOfRange(param, MAX_KEY_LIMIT)
  }
  for (const [field, param] of BUDGET_FIELDS) {
    const value = input[field]
    if (value !== undefined && value !== null && !(Number.isInteger(value) && value >= 1 && value <= MAX_BUDGET_USD * 1e9)) {
      throw invalidRequest(`Invalid request: ${param} must be an amount of USD above 0 and at most ${MAX_BUDGET_USD}`, { param })
    }
  }
}

/**
 * What a key name may not hold: control characters (CR, LF, ESC, tab, DEL, C1), line and paragraph
 * separators, lone surrogates and bidirectional overrides. Any of them lets a name forge rows or
 * recolour a terminal where names are printed (`keys list`), or reorder text around it.
 */
const UNPRINTABLE = /[\p{Cc}\p{Zl}\p{Zp}\p{Cs}\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/u

/** Whether `text` is printable: no character of UNPRINTABLE. */
export const isPrintable = (text: string): boolean => !UNPRINTABLE.test(text)

const UNPRINTABLE_ALL = new RegExp(UNPRINTABLE.source, 'gu')
const SHORT_ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' }

/**
 * `text` with every unprintable character written as an escape (`\n`, `\r`, `\t`, `\u001b`...), for
 * printing to a terminal: names stored before the rule existed cannot forge rows or colours.
 */
export const escapeUnprintable = (text: string): string =>
  text.replace(UNPRINTABLE_ALL, (char) => SHORT_ESCAPES[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)

export function checkName(raw: string): string {
  const name = raw.trim()
  if (name === '' || name.length > 100) throw invalidRequest('name must be 1 to 100 characters', { param: 'name' })
  if (!isPrintable(name)) {
    throw invalidRequest('name must be printable text: no control characters (line breaks, tabs, escapes), line separators or direction overrides', {
      param: 'name',
    })
  }
  return name
}

/**
 * One page of the key listing: keys in ascending id order (the primary key, so a page reads only its
 * own rows), those after `after`, at most `limit`. `search` keeps the keys whose name, prefix or id
 * holds it, in any case; it is matched literally (`%` and `_` are plain characters).
 */
export interface KeyPageQuery {
  after: string | null
  limit: number
  search: string | null
}

/**
 * Where keys are kept. Every write also changes the key-table version, so a key cache in any
 * process sharing the store can tell, with one cheap read, that it must reload.
 */
export interface KeyStore {
  /** The key-table version: it changes whenever any process changes a key. */
  version(): Promise<number>
  /** Every key (for the cache). */
  all(): Promise<KeyRecord[]>
  /** Every key, newest first. */
  list(): Promise<KeyRecord[]>
  /** One page of keys in id order (see KeyPageQuery). */
  page(query: KeyPageQuery): Promise<KeyRecord[]>
  find(idOrPrefix: string): Promise<KeyRecord | null>
  tierExists(tier: string): Promise<boolean>
  insert(record: KeyRecord): Promise<void>
  /**
   * Inserts only when the store holds no key at all, atomically: of several processes starting
   * together on a new database, exactly one makes the first key. Says whether it inserted.
   */
  insertFirst(record: KeyRecord): Promise<boolean>
  update(id: string, changes: Partial<KeyRecord>): Promise<void>
}

/** The public view of a key record: everything but the hash. */
export function keyView(record: KeyRecord) {
  return {
    id: record.id,
    prefix: record.prefix,
    name: record.name,
    tier: record.tier,
    created_at: new Date(record.createdAt).toISOString(),
    expires_at: record.expiresAt === null ? null : new Date(record.expiresAt).toISOString(),
    revoked_at: record.revokedAt === null ? null : new Date(record.revokedAt).toISOString(),
    rpm: record.requestsPerMinute,
    tpm: record.tokensPerMinute,
    max_concurrent: record.maxConcurrent,
    monthly_token_quota: record.monthlyTokenQuota,
    daily_request_quota: record.dailyRequestQuota,
    daily_budget_usd: usdOrNull(record.dailyBudgetNanos),
    monthly_budget_usd: usdOrNull(record.monthlyBudgetNanos),
  }
}
