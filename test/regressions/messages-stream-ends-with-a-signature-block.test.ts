import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { EventsFromChunks } from '../../src/wire/anthropic/events-from-chunks'
import type { StreamEvent } from '../../src/wire/anthropic/types'
import type { ChatCompletionChunk } from '../../src/wire/pivot/types'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

// Claude Code (`claude -p`) through a Gemini alias printed an empty answer. Gemini signs a text answer
// on its last part (https://ai.google.dev/gemini-api/docs/thought-signatures), so a stream gives the
// signature after the text; the Messages stream wrote it as a thinking block after the text block,
// and `claude -p` prints the last block. Such a signature is now left out of a Messages stream;
// a function call's signature (which Google requires back) still comes before the tool_use blocks.

const chunk = (delta: ChatCompletionChunk['choices'][number]['delta'], finish: string | null = null): ChatCompletionChunk => ({
  id: 'c',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'gemini-2.5-flash',
  choices: [{ index: 0, delta, finish_reason: finish }],
})

const blockTypes = (events: StreamEvent[]) =>
  events.flatMap((e) => (e.type === 'content_block_start' ? [(e as Extract<StreamEvent, { type: 'content_block_start' }>).content_block.type] : []))

describe('a Messages stream from a Gemini text answer', () => {
  test('ends with its text block: the text signature that streams after it is left out', () => {
    const translator = new EventsFromChunks('google/flash')
    const events = [
      ...[
        chunk({ role: 'assistant', content: 'Hello' }),
        chunk({ content: ' there.' }),
        chunk({ thinking_blocks: [{ type: 'thinking', thinking: '', signature: 'cg1.gemini.t.c2lnbmVk' }] }),
        chunk({}, 'stop'),
      ].flatMap((c) => translator.push(c)),
      ...translator.end(),
    ]
    expect(blockTypes(events)).toEqual(['text'])
  })

  test("keeps a function call's signature, before the tool_use block", () => {
    const translator = new EventsFromChunks('google/flash')
    const events = [
      ...[
        chunk({ role: 'assistant', content: 'Let me look.' }),
        chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'Bash', arguments: '{"command":"ls"}' } }] }),
        chunk({ thinking_blocks: [{ type: 'thinking', thinking: '', signature: 'cg1.gemini.c0.c2lnbmVk' }] }),
        chunk({}, 'tool_calls'),
      ].flatMap((c) => translator.push(c)),
      ...translator.end(),
    ]
    expect(blockTypes(events)).toEqual(['text', 'thinking', 'tool_use'])
    const signature = events.find((e) => e.type === 'content_block_delta' && e.delta.type === 'signature_delta')
    expect(signature).toMatchObject({ delta: { signature: 'cg1.gemini.c0.c2lnbmVk' } })
  })
})
