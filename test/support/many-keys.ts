import { Database } from 'bun:sqlite'
import { loadGatewayConfig } from '../../src/config/load'
import { providerKinds } from '../../src/providers'
import { openSqliteStores } from '../../src/storage/sqlite'

/** The name of the `i`th seeded key: `user-00042`, so a test can search for one it knows. */
export const seededName = (i: number) => `user-${String(i).padStart(5, '0')}`

/**
 * A new database at `path` holding `count` keys, written straight into the table in one transaction
 * (50,000 in well under a second, where the admin API takes one request each). The keys are real
 * rows: random ids as the key service makes them, unique prefixes and hashes, tier `free`; no one
 * holds their secrets, so they list but do not authenticate.
 */
export async function seedKeys(path: string, count: number, now = Date.now()): Promise<void> {
  const stores = openSqliteStores(path)
  await stores.config.apply(loadGatewayConfig(null, providerKinds), now, () => null)
  await stores.close()
  const sqlite = new Database(path, { strict: true })
  try {
    const insert = sqlite.prepare('INSERT INTO api_keys (id, prefix, hash, name, tier, created_at) VALUES ($id, $prefix, $hash, $name, $tier, $at)')
    sqlite.transaction(() => {
      for (let i = 0; i < count; i++) {
        const id = `key_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`
        insert.run({ id, prefix: `sk-cg-${i.toString(36).padStart(6, '0')}`, hash: `seeded-${id}`, name: seededName(i), tier: 'free', at: now - i })
      }
    })()
  } finally {
    sqlite.close()
  }
}
