import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { effortOfBudget } from '../../src/wire/anthropic/effort'
import { fromMessagesRequest } from '../../src/wire/anthropic/request-to-chat'
import type { MessagesRequest } from '../../src/wire/anthropic/types'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

/**
 * Regression: thinking budgets of 16,385-32,768 tokens became `xhigh` (which many OpenAI-compatible
 * servers refuse) and budgets above 32,768 fell back to `high`, so a bigger budget got less effort.
 */
const EFFORTS = ['low', 'medium', 'high', 'xhigh']
const request = (thinking: unknown, extra: Record<string, unknown> = {}): MessagesRequest =>
  ({ model: 'a/b', max_tokens: 64_000, messages: [{ role: 'user', content: 'x' }], thinking, ...extra }) as MessagesRequest

describe('thinking budgets map to reasoning_effort in order', () => {
  test('monotonic over every budget from 1 to 128k, for each upstream maximum', () => {
    for (const max of EFFORTS) {
      let previous = -1
      for (let budget = 1; budget <= 131_072; budget += 127) {
        const rank = EFFORTS.indexOf(effortOfBudget(budget, max))
        expect(rank).toBeGreaterThanOrEqual(previous)
        expect(rank).toBeLessThanOrEqual(EFFORTS.indexOf(max))
        previous = rank
      }
    }
  })

  test('the documented steps: ≤ 1024 low, ≤ 4096 medium, above high; xhigh above 16384 only where the upstream takes it', () => {
    expect([1024, 1025, 4096, 4097, 16_384, 16_385, 31_999, 64_000].map((b) => effortOfBudget(b, 'high'))).toEqual([
      'low',
      'medium',
      'medium',
      'high',
      'high',
      'high',
      'high',
      'high',
    ])
    expect([16_384, 16_385, 64_000].map((b) => effortOfBudget(b, 'xhigh'))).toEqual(['high', 'xhigh', 'xhigh'])
    expect(effortOfBudget(64_000, 'medium')).toBe('medium')
  })

  test('a Claude Code-sized budget reaches a default upstream as high, never xhigh', () => {
    expect(fromMessagesRequest(request({ type: 'enabled', budget_tokens: 31_999 }), 'm').reasoning_effort).toBe('high')
    expect(fromMessagesRequest(request({ type: 'enabled', budget_tokens: 31_999 }), 'm', { maxEffort: 'xhigh' }).reasoning_effort).toBe('xhigh')
    expect(fromMessagesRequest(request(undefined, { output_config: { effort: 'max' } }), 'm').reasoning_effort).toBe('high')
  })

  test('adaptive thinking is never dropped: medium, or the output effort', () => {
    expect(fromMessagesRequest(request({ type: 'adaptive' }), 'm').reasoning_effort).toBe('medium')
    expect(fromMessagesRequest(request({ type: 'adaptive' }, { output_config: { effort: 'low' } }), 'm').reasoning_effort).toBe('low')
  })
})
