import { desc, eq, or, sql } from 'drizzle-orm'
import { apiKeys, keyTableVersion, tiers } from '../../db/schema'
import type { Db } from '../db'
import { invalidRequest, notFound } from '../errors'

export type KeyRecord = typeof apiKeys.$inferSelect

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

export const hashApiKey = (key: string): string => new Bun.CryptoHasher('sha256').update(key).digest('hex')

export const visiblePrefix = (key: string): string => key.slice(0, VISIBLE_PREFIX_LENGTH)

export interface KeyLimitOverrides {
  requestsPerMinute?: number | null
  tokensPerMinute?: number | null
  maxConcurrent?: number | null
  monthlyTokenQuota?: number | null
  dailyRequestQuota?: number | null
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

const DAY_MS = 86_400_000
/** The longest expiry a key may get: about a hundred years. */
export const MAX_EXPIRES_IN_DAYS = 36_500
/** The largest per-key limit or quota: far above any real one, and exact as a JSON number. */
export const MAX_KEY_LIMIT = 1_000_000_000_000

const LIMIT_FIELDS = [
  ['requestsPerMinute', 'rpm'],
  ['tokensPerMinute', 'tpm'],
  ['maxConcurrent', 'max_concurrent'],
  ['monthlyTokenQuota', 'monthly_token_quota'],
  ['dailyRequestQuota', 'daily_request_quota'],
] as const

const outOfRange = (param: string, max: number) => invalidRequest(`Invalid request: ${param} must be a whole number from 1 to ${max}`, { param })

/** Checks every number in a new key or a change before anything is written: a refused request writes nothing. */
function checkNumbers(input: KeyPatch): void {
  const days = input.expiresInDays
  if (days !== undefined && days !== null && !(Number.isInteger(days) && days >= 1 && days <= MAX_EXPIRES_IN_DAYS)) {
    throw outOfRange('expires_in_days', MAX_EXPIRES_IN_DAYS)
  }
  for (const [field, param] of LIMIT_FIELDS) {
    const value = input[field]
    if (value !== undefined && value !== null && !(Number.isInteger(value) && value >= 1 && value <= MAX_KEY_LIMIT)) throw outOfRange(param, MAX_KEY_LIMIT)
  }
}

function checkName(raw: string): string {
  const name = raw.trim()
  if (name === '' || name.length > 100) throw invalidRequest('name must be 1 to 100 characters', { param: 'name' })
  return name
}

/**
 * The `api_keys` table. Every write also raises the key-table version in the same transaction, so a
 * key cache in any process sharing the database can tell, with one cheap read, that it must reload.
 */
export class KeyStore {
  private readonly readVersion
  private readonly bumpVersion
  private readonly dataVersion

  constructor(private readonly db: Db) {
    this.readVersion = db.select({ version: keyTableVersion.version }).from(keyTableVersion).where(eq(keyTableVersion.id, 1)).prepare()
    this.bumpVersion = db
      .insert(keyTableVersion)
      .values({ id: 1, version: 1 })
      .onConflictDoUpdate({ target: keyTableVersion.id, set: { version: sql`${keyTableVersion.version} + 1` } })
      .prepare()
    this.dataVersion = db.$client.query<{ data_version: number }, []>('PRAGMA data_version')
  }

  /** The key-table version: it changes whenever any process changes a key. */
  version(): number {
    return this.readVersion.get()?.version ?? 0
  }

  /**
   * SQLite's data_version for this connection: it changes when another connection commits anything.
   * Reading it touches no table, so it screens the version read when nothing was written at all.
   */
  databaseVersion(): number {
    return this.dataVersion.get()?.data_version ?? -1
  }

  all(): KeyRecord[] {
    return this.db.select().from(apiKeys).all()
  }

  list(): KeyRecord[] {
    return this.db.select().from(apiKeys).orderBy(desc(apiKeys.createdAt)).all()
  }

  find(idOrPrefix: string): KeyRecord {
    const record = this.db
      .select()
      .from(apiKeys)
      .where(or(eq(apiKeys.id, idOrPrefix), eq(apiKeys.prefix, idOrPrefix)))
      .get()
    if (!record) throw notFound(`no key with id or prefix "${idOrPrefix}"`, { code: 'key_not_found' })
    return record
  }

  private checkTier(tier: string): string {
    if (!this.db.select({ name: tiers.name }).from(tiers).where(eq(tiers.name, tier)).get()) {
      throw invalidRequest(`unknown tier "${tier}"`, { param: 'tier' })
    }
    return tier
  }

  /**
   * Creates a key only when the table holds none, in one immediate transaction: of several processes
   * starting together on a new database, exactly one makes the first key. null when keys exist.
   */
  createFirst(input: NewKey, now: number): { record: KeyRecord; key: string } | null {
    return this.db.transaction((tx) => (tx.select({ id: apiKeys.id }).from(apiKeys).limit(1).get() ? null : this.create(input, now)), { behavior: 'immediate' })
  }

  /** Creates a key and returns its record and the key itself, the only time the key exists in clear. */
  create(input: NewKey, now: number): { record: KeyRecord; key: string } {
    checkNumbers(input)
    const name = checkName(input.name)
    this.checkTier(input.tier)
    const key = generateApiKey()
    const record: KeyRecord = {
      id: `key_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`,
      prefix: visiblePrefix(key),
      hash: hashApiKey(key),
      name,
      tier: input.tier,
      createdAt: now,
      expiresAt: input.expiresInDays ? now + input.expiresInDays * DAY_MS : null,
      revokedAt: null,
      requestsPerMinute: input.requestsPerMinute ?? null,
      tokensPerMinute: input.tokensPerMinute ?? null,
      maxConcurrent: input.maxConcurrent ?? null,
      monthlyTokenQuota: input.monthlyTokenQuota ?? null,
      dailyRequestQuota: input.dailyRequestQuota ?? null,
    }
    this.db.transaction((tx) => {
      tx.insert(apiKeys).values(record).run()
      this.bumpVersion.run()
    })
    return { record, key }
  }

  update(idOrPrefix: string, patch: KeyPatch, now: number): KeyRecord {
    checkNumbers(patch)
    const record = this.find(idOrPrefix)
    const changes: Partial<KeyRecord> = {}
    if (patch.name !== undefined) changes.name = checkName(patch.name)
    if (patch.tier !== undefined) changes.tier = this.checkTier(patch.tier)
    if (patch.expiresInDays !== undefined) changes.expiresAt = patch.expiresInDays === null ? null : now + patch.expiresInDays * DAY_MS
    for (const [field] of LIMIT_FIELDS) {
      if (patch[field] !== undefined) changes[field] = patch[field]
    }
    if (Object.keys(changes).length > 0) {
      this.db.transaction((tx) => {
        tx.update(apiKeys).set(changes).where(eq(apiKeys.id, record.id)).run()
        this.bumpVersion.run()
      })
    }
    return { ...record, ...changes }
  }

  /** Revokes a key (idempotent: a revoked key keeps its first revocation time). */
  revoke(idOrPrefix: string, now: number): KeyRecord {
    const record = this.find(idOrPrefix)
    if (record.revokedAt !== null) return record
    this.db.transaction((tx) => {
      tx.update(apiKeys).set({ revokedAt: now }).where(eq(apiKeys.id, record.id)).run()
      this.bumpVersion.run()
    })
    return { ...record, revokedAt: now }
  }
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
  }
}
