import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { waitFor } from '../support/wait'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

describe('waitFor', () => {
  test('polls until the check returns a truthy value, and returns that value', async () => {
    let calls = 0
    const value = await waitFor(() => (++calls < 4 ? null : { calls }), 'the fourth call', { intervalMs: 1 })
    expect(value).toEqual({ calls: 4 })
    expect(calls).toBe(4)
  })

  test('awaits an async check; falsy values (false, 0, empty string, undefined) keep it polling', async () => {
    const answers: unknown[] = [false, 0, '', undefined, 'done']
    const value = await waitFor(async () => answers.shift(), 'a non-empty answer', { intervalMs: 1 })
    expect(value).toBe('done')
    expect(answers).toEqual([])
  })

  test('a check that holds at once is not slept on', async () => {
    let calls = 0
    expect(await waitFor(() => ++calls, 'anything', { intervalMs: 60_000 })).toBe(1)
  })

  test('gives up after timeoutMs with an error naming what it waited for', async () => {
    let calls = 0
    const failure = await waitFor(() => (calls++, false), 'the moon to turn blue', { intervalMs: 1, timeoutMs: 20 }).catch((error: Error) => error)
    expect(failure).toBeInstanceOf(Error)
    expect((failure as Error).message).toBe('waitFor: gave up after 20 ms waiting for the moon to turn blue')
    expect(calls).toBeGreaterThan(1)
  })

  test('a description given as a function is read only when the wait fails', async () => {
    let described = 0
    const what = () => `details #${++described}`
    expect(await waitFor(() => true, what)).toBe(true)
    expect(described).toBe(0)
    const failure = await waitFor(() => false, what, { intervalMs: 1, timeoutMs: 5 }).catch((error: Error) => error)
    expect((failure as Error).message).toContain('details #1')
  })

  test('an error thrown by the check ends the wait at once, as it is', async () => {
    let calls = 0
    const boom = new Error('boom')
    const failure = await waitFor(() => {
      calls++
      throw boom
    }, 'never').catch((error: unknown) => error)
    expect(failure).toBe(boom)
    expect(calls).toBe(1)
  })
})
