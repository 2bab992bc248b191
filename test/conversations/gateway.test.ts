import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { loadGatewayConfig, parseGatewayConfig } from '../../src/config/load'
import { expiryOf } from '../../src/conversations/store'
import type { GatewayError } from '../../src/errors'
import { startRollupPruning } from '../../src/gateway'
import { providerKinds } from '../../src/providers'
import { DAY_MS } from '../../src/time'
import { inProcessGateway } from '../support/gateway'
import { TEST_MS } from '../support/hooks'
import { waitFor } from '../support/wait'

setDefaultTimeout(TEST_MS)

const parse = (raw: unknown) => parseGatewayConfig(raw, 'test.toml', providerKinds)

describe('[conversations] in the config file', () => {
  test('responses_ttl_days: 30 days unless set', () => {
    expect(loadGatewayConfig(null, providerKinds).conversations).toEqual({ responsesTtlDays: 30 })
    expect(parse({ conversations: {} }).conversations).toEqual({ responsesTtlDays: 30 })
    expect(parse({ conversations: { responses_ttl_days: 7 } }).conversations).toEqual({ responsesTtlDays: 7 })
  })

  test('a bad value or an unknown field is refused, naming it', () => {
    const field = (raw: unknown) => {
      try {
        parse(raw)
      } catch (error) {
        return (error as GatewayError).param
      }
      return null
    }
    expect(field({ conversations: { responses_ttl_days: 0 } })).toBe('conversations.responses_ttl_days')
    expect(field({ conversations: { responses_ttl_days: 1.5 } })).toBe('conversations.responses_ttl_days')
    expect(field({ conversations: { responses_ttl_day: 3 } })).toBe('conversations.responses_ttl_day')
  })
})

describe('the gateway keeps conversations and prunes them', () => {
  test('records expire after the configured TTL (rounded up to the hour), and pruning removes them', async () => {
    const clock = { now: Date.UTC(2026, 10, 26, 10, 15) }
    const gw = await inProcessGateway({ now: () => clock.now })
    try {
      const { conversations } = gw.gateway
      const create = { model: 'local/echo', max_tokens: 10, messages: [{ role: 'user' as const, content: 'hi' }], thread: { type: 'create' } }
      const turn = await conversations.beginThread(create, 'key-1')
      await turn!.record({ id: 'msg_kept', content: [{ type: 'text', text: 'hi' }] }, 'local', false)
      const head = await conversations.store.head({ keyId: 'key-1', id: 'msg_kept' }, clock.now)
      expect(head?.expiresAt).toBe(expiryOf(clock.now, 30 * DAY_MS))
      expect(head!.expiresAt - clock.now).toBeGreaterThanOrEqual(30 * DAY_MS)
      expect(head!.expiresAt - clock.now).toBeLessThan(30 * DAY_MS + 3_600_000)

      clock.now = head!.expiresAt
      const ref = { keyId: 'key-1', id: 'msg_kept' }
      expect(await conversations.store.head(ref, clock.now)).toBeNull()
      // Gone for reads already (a read as of time 0 still sees the row); the pruning timer gives the space back.
      expect(await conversations.store.head(ref, 0)).not.toBeNull()
      const stop = startRollupPruning(gw.gateway, 10)
      try {
        await waitFor(async () => (await conversations.store.head(ref, 0)) === null, 'the expired record pruned')
      } finally {
        stop()
      }
    } finally {
      await gw.close()
    }
  })
})
