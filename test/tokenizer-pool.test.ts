import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base'
import { countChatTokens } from '../src/providers/openai/tokens'
import { TokenizerPool } from '../src/providers/openai/tokenizer-pool'
import type { ChatRequest } from '../src/wire/pivot/types'
import { TEST_MS } from './support/hooks'

/** The o200k count in worker threads: the same numbers as on the main thread, and a thread that dies is replaced. */
setDefaultTimeout(TEST_MS)

describe('the tokenizer pool', () => {
  test('counts what the tokenizer counts in this thread: roles, text parts, tool calls, tools; 85 per image; the chat overhead', async () => {
    const tools = [{ type: 'function', function: { name: 'lookup', description: 'Finds a word', parameters: { type: 'object', properties: {} } } }]
    const request = {
      model: 'gpt-4o',
      messages: [
        { role: 'system', content: 'You are terse.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in this picture? Über café, 12345.' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
          ],
        },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{"word":"café"}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'a drink' },
      ],
      tools,
    } as unknown as ChatRequest
    const expected =
      3 +
      4 * 3 +
      ['system', 'You are terse.', 'user', 'What is in this picture? Über café, 12345.', 'assistant', 'lookup', '{"word":"café"}', 'tool', 'a drink']
        .map((text) => countTokens(text))
        .reduce((a, b) => a + b, 0) +
      85 +
      countTokens(JSON.stringify(tools))
    expect(await countChatTokens(request)).toBe(expected)
    // Several at once are all answered, each with its own count.
    const many = await Promise.all(
      Array.from({ length: 20 }, (_, i) => countChatTokens({ model: 'm', messages: [{ role: 'user', content: 'word '.repeat(i) }] } as ChatRequest)),
    )
    expect(many).toEqual(Array.from({ length: 20 }, (_, i) => 6 + countTokens('user') + countTokens('word '.repeat(i))))
  })

  test('a thread that throws or exits fails its job only; the next jobs get a new thread', async () => {
    const pool = new TokenizerPool(new URL('./fixtures/workers/flaky-token-worker.ts', import.meta.url), 1)
    const before = pool.count(['a'])
    const crashed = pool.count(['crash'])
    const after = pool.count(['a', 'b', 'c'])
    expect(await before).toBe(1)
    await expect(crashed).rejects.toThrow('The tokenizer thread failed')
    expect(await after).toBe(3)
    await expect(pool.count(['exit'])).rejects.toThrow('The tokenizer thread failed')
    expect(await pool.count(['a', 'b'])).toBe(2)
    expect(pool.waiting).toBe(0)
  })
})
