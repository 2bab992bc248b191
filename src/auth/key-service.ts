import { invalidRequest, notFound } from '../errors'
import { DAY_MS } from '../time'
import type { KeyCache } from './key-cache'
import { type KeyPage, readKeyPage } from './key-listing'
import {
  checkName,
  checkNumbers,
  generateApiKey,
  hashApiKey,
  type KeyPageQuery,
  type KeyPatch,
  type KeyRecord,
  type KeyStore,
  BUDGET_FIELDS,
  LIMIT_FIELDS,
  type NewKey,
  visiblePrefix,
} from './keys'

/**
 * The one way keys are created, changed and revoked: by the admin API, the dashboard, the CLI and
 * the first-key creation alike. Everything a request asks is checked before anything is written,
 * so a refused request writes nothing. A change is written, then put into this process's cache, so
 * it takes effect here at once; other processes see it through the key-table version (see KeyCache).
 */
export class KeyService {
  constructor(
    readonly store: KeyStore,
    /** null in processes that do not authenticate (the CLI). */
    private readonly cache: KeyCache | null,
    private readonly now: () => number = Date.now,
  ) {}

  private async checkTier(tier: string): Promise<string> {
    if (!(await this.store.tierExists(tier))) throw invalidRequest(`unknown tier "${tier}"`, { param: 'tier' })
    return tier
  }

  /** A new key's record, checked, and the key itself: the only time the key exists in clear. */
  private async newKey(input: NewKey): Promise<{ record: KeyRecord; key: string }> {
    checkNumbers(input)
    const name = checkName(input.name)
    await this.checkTier(input.tier)
    const now = this.now()
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
      dailyBudgetNanos: input.dailyBudgetNanos ?? null,
      monthlyBudgetNanos: input.monthlyBudgetNanos ?? null,
    }
    return { record, key }
  }

  async create(input: NewKey): Promise<{ record: KeyRecord; key: string }> {
    const created = await this.newKey(input)
    await this.store.insert(created.record)
    this.cache?.put(created.record)
    return created
  }

  /** The first key, when the store has none yet (see KeyStore.insertFirst); null when keys exist. */
  async createFirst(input: NewKey): Promise<{ record: KeyRecord; key: string } | null> {
    const created = await this.newKey(input)
    if (!(await this.store.insertFirst(created.record))) return null
    this.cache?.put(created.record)
    return created
  }

  async update(idOrPrefix: string, patch: KeyPatch): Promise<KeyRecord> {
    checkNumbers(patch)
    const record = await this.find(idOrPrefix)
    const changes: Partial<KeyRecord> = {}
    if (patch.name !== undefined) changes.name = checkName(patch.name)
    if (patch.tier !== undefined) changes.tier = await this.checkTier(patch.tier)
    if (patch.expiresInDays !== undefined) changes.expiresAt = patch.expiresInDays === null ? null : this.now() + patch.expiresInDays * DAY_MS
    for (const [field] of [...LIMIT_FIELDS, ...BUDGET_FIELDS]) {
      if (patch[field] !== undefined) changes[field] = patch[field]
    }
    if (Object.keys(changes).length === 0) return record
    await this.store.update(record.id, changes)
    const updated = { ...record, ...changes }
    this.cache?.put(updated)
    return updated
  }

  /** Revokes a key (idempotent: a revoked key keeps its first revocation time). */
  async revoke(idOrPrefix: string): Promise<KeyRecord> {
    const record = await this.find(idOrPrefix)
    if (record.revokedAt !== null) return record
    const revokedAt = this.now()
    await this.store.update(record.id, { revokedAt })
    const revoked = { ...record, revokedAt }
    this.cache?.put(revoked)
    return revoked
  }

  /** One page of the listing and the cursor of the next (see KeyPageQuery). */
  page(query: KeyPageQuery): Promise<KeyPage> {
    return readKeyPage((bounded) => this.store.page(bounded), query)
  }

  async find(idOrPrefix: string): Promise<KeyRecord> {
    const record = await this.store.find(idOrPrefix)
    if (!record) throw notFound(`no key with id or prefix "${idOrPrefix}"`, { code: 'key_not_found' })
    return record
  }
}
