import { and, asc, desc, eq, gt, ilike, or, sql } from 'drizzle-orm'
import { apiKeys, keyTableVersion, tiers } from '../../../db/pg/schema'
import { likePattern } from '../../auth/key-listing'
import type { KeyPageQuery, KeyRecord, KeyStore } from '../../auth/keys'
import { CHANGES_CHANNEL, guarded, LOCK_FIRST_KEY, LOCK_SPACE, type PgDb, type PgTx } from './open'

/** Raises the key-table version and announces the change; the announcement goes out at commit. */
async function keysChanged(tx: PgTx): Promise<void> {
  await tx
    .insert(keyTableVersion)
    .values({ id: 1, version: 1 })
    .onConflictDoUpdate({ target: keyTableVersion.id, set: { version: sql`${keyTableVersion.version} + 1` } })
  await tx.execute(sql`SELECT pg_notify(${CHANGES_CHANNEL}, 'keys')`)
}

/**
 * The `api_keys` table on Postgres. Every write raises the key-table version in the same
 * transaction, so an instance that meets an unknown key finds, with one indexed read, whether any
 * instance changed a key since it loaded them; the NOTIFY only makes that sooner.
 */
export class PgKeyStore implements KeyStore {
  private readonly readVersion
  private readonly findByIdOrPrefix

  constructor(private readonly db: PgDb) {
    this.readVersion = db.select({ version: keyTableVersion.version }).from(keyTableVersion).where(eq(keyTableVersion.id, 1)).prepare('key_table_version')
    const id = sql.placeholder('id')
    this.findByIdOrPrefix = db
      .select()
      .from(apiKeys)
      .where(or(eq(apiKeys.id, id), eq(apiKeys.prefix, id)))
      .prepare('find_key')
  }

  version(): Promise<number> {
    return guarded(async () => (await this.readVersion.execute())[0]?.version ?? 0)
  }

  all(): Promise<KeyRecord[]> {
    return guarded(() => this.db.select().from(apiKeys))
  }

  list(): Promise<KeyRecord[]> {
    return guarded(() => this.db.select().from(apiKeys).orderBy(desc(apiKeys.createdAt)))
  }

  page(query: KeyPageQuery): Promise<KeyRecord[]> {
    return guarded(() => pgKeyPageSelect(this.db, query))
  }

  find(idOrPrefix: string): Promise<KeyRecord | null> {
    return guarded(async () => (await this.findByIdOrPrefix.execute({ id: idOrPrefix }))[0] ?? null)
  }

  tierExists(tier: string): Promise<boolean> {
    return guarded(async () => (await this.db.select({ name: tiers.name }).from(tiers).where(eq(tiers.name, tier))).length > 0)
  }

  insert(record: KeyRecord): Promise<void> {
    return guarded(() =>
      this.db.transaction(async (tx) => {
        await tx.insert(apiKeys).values(record)
        await keysChanged(tx)
      }),
    )
  }

  insertFirst(record: KeyRecord): Promise<boolean> {
    // Under an advisory lock: of several instances starting together on a new database, the first
    // makes the key and the others, once they hold the lock, find it there.
    return guarded(() =>
      this.db.transaction(async (tx) => {
        await tx.execute(sql`SELECT pg_advisory_xact_lock(${LOCK_SPACE}, ${LOCK_FIRST_KEY})`)
        if ((await tx.select({ id: apiKeys.id }).from(apiKeys).limit(1)).length > 0) return false
        await tx.insert(apiKeys).values(record)
        await keysChanged(tx)
        return true
      }),
    )
  }

  update(id: string, changes: Partial<KeyRecord>): Promise<void> {
    return guarded(() =>
      this.db.transaction(async (tx) => {
        await tx.update(apiKeys).set(changes).where(eq(apiKeys.id, id))
        await keysChanged(tx)
      }),
    )
  }
}

/**
 * A page of keys in id order from just after the cursor: the planner walks the primary key and stops
 * after `limit` rows. ILIKE's escape character is the backslash likePattern uses. Exported for the
 * test that reads the query plan.
 */
export function pgKeyPageSelect(db: PgDb, { after, limit, search }: KeyPageQuery) {
  const pattern = search === null ? null : likePattern(search)
  const matches = pattern === null ? undefined : or(ilike(apiKeys.name, pattern), ilike(apiKeys.prefix, pattern), ilike(apiKeys.id, pattern))
  return db
    .select()
    .from(apiKeys)
    .where(and(after === null ? undefined : gt(apiKeys.id, after), matches))
    .orderBy(asc(apiKeys.id))
    .limit(limit)
}
