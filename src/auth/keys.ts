import { desc, eq, or } from 'drizzle-orm'
import { apiKeys, tiers } from '../../db/schema'
import type { Db } from '../db'
import { GatewayError } from '../errors'

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

const DAY_MS = 86_400_000

function checkName(raw: string): string {
  const name = raw.trim()
  if (name === '' || name.length > 100) throw new GatewayError(400, 'invalid_request_error', 'name must be 1 to 100 characters', undefined, 'name')
  return name
}

function checkTier(db: Db, tier: string): string {
  if (!db.select({ name: tiers.name }).from(tiers).where(eq(tiers.name, tier)).get()) {
    throw new GatewayError(400, 'invalid_request_error', `unknown tier "${tier}"`, undefined, 'tier')
  }
  return tier
}

/** Creates a key and returns its record and the key itself, the only time the key exists in clear. */
export function createApiKey(db: Db, input: NewKey, now = Date.now()): { record: KeyRecord; key: string } {
  const name = checkName(input.name)
  checkTier(db, input.tier)
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
  db.insert(apiKeys).values(record).run()
  return { record, key }
}

export const listApiKeys = (db: Db): KeyRecord[] => db.select().from(apiKeys).orderBy(desc(apiKeys.createdAt)).all()

export function findApiKey(db: Db, idOrPrefix: string): KeyRecord {
  const record = db
    .select()
    .from(apiKeys)
    .where(or(eq(apiKeys.id, idOrPrefix), eq(apiKeys.prefix, idOrPrefix)))
    .get()
  if (!record) throw new GatewayError(404, 'not_found_error', `no key with id or prefix "${idOrPrefix}"`, 'key_not_found')
  return record
}

/** A change to a key: absent fields stay, `null` clears an override or the expiry. */
export interface KeyPatch extends KeyLimitOverrides {
  name?: string
  tier?: string
  expiresInDays?: number | null
}

export function updateApiKey(db: Db, idOrPrefix: string, patch: KeyPatch, now = Date.now()): KeyRecord {
  const record = findApiKey(db, idOrPrefix)
  const changes: Partial<KeyRecord> = {}
  if (patch.name !== undefined) changes.name = checkName(patch.name)
  if (patch.tier !== undefined) changes.tier = checkTier(db, patch.tier)
  if (patch.expiresInDays !== undefined) changes.expiresAt = patch.expiresInDays === null ? null : now + patch.expiresInDays * DAY_MS
  for (const field of ['requestsPerMinute', 'tokensPerMinute', 'maxConcurrent', 'monthlyTokenQuota', 'dailyRequestQuota'] as const) {
    if (patch[field] !== undefined) changes[field] = patch[field]
  }
  if (Object.keys(changes).length > 0) db.update(apiKeys).set(changes).where(eq(apiKeys.id, record.id)).run()
  return { ...record, ...changes }
}

/** Revokes a key (idempotent: a revoked key keeps its first revocation time). */
export function revokeApiKey(db: Db, idOrPrefix: string, now = Date.now()): KeyRecord {
  const record = findApiKey(db, idOrPrefix)
  if (record.revokedAt !== null) return record
  db.update(apiKeys).set({ revokedAt: now }).where(eq(apiKeys.id, record.id)).run()
  return { ...record, revokedAt: now }
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
