import { expect, setDefaultTimeout, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { generateApiKey, hashApiKey } from '../../src/auth/keys'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

// Keys already stored were hashed as SHA-256 hex: a faster hash call must keep every stored key valid.
test('an API key hashes to the SHA-256 hex digest that stored keys were made with', () => {
  const keys = [generateApiKey(), generateApiKey(), 'sk-svc-é-ü-你好', '']
  for (const key of keys) expect(hashApiKey(key)).toBe(createHash('sha256').update(key, 'utf8').digest('hex'))
  expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
})
