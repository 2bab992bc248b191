import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { ChunkRelay } from '../../src/wire/openai-chat/stream'
import { TEST_MS } from '../support/hooks'
import { openapiErrors } from '../support/openapi'

setDefaultTimeout(TEST_MS)

// Issue 33: Azure OpenAI opens a stream with a chunk of the prompt's content-filter results, no
// choices, and `"object": ""`, `"id": ""`, `"model": ""`
// (https://learn.microsoft.com/azure/ai-foundry/openai/concepts/content-filter). The gateway relayed
// it as it came; OpenAI's published document allows only `chat.completion.chunk` there, so a client
// generated from it refused the stream's first chunk. And the relay learnt the upstream's model from
// that chunk (""), so no later chunk matched it and each was outlined in full. Now the chunk is named
// `chat.completion.chunk`, the filter results kept, and the model is learnt from the first chunk
// that names one.

const FILTER = [{ prompt_index: 0, content_filter_results: { hate: { filtered: false, severity: 'safe' } } }]
const base = { id: 'chatcmpl-az', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'gpt-4o-2024-11-20' }
const azureStream = [
  { id: '', object: '', created: 0, model: '', choices: [], prompt_filter_results: FILTER },
  { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null, content_filter_results: {} }] },
  { ...base, choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: null }] },
  { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
  { ...base, choices: [], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } },
]

const relayed = (includeUsage: boolean) =>
  new ChunkRelay('az/gpt', includeUsage)
    .wire(azureStream.map((chunk) => ({ data: JSON.stringify(chunk) })))
    .split('\n\n')
    .filter(Boolean)
    .map((event) => JSON.parse(event.slice('data: '.length)))

describe("Azure's first, choiceless chunk", () => {
  for (const includeUsage of [true, false])
    test(`include_usage ${includeUsage}: every chunk is a chat.completion.chunk of the alias, the filter results kept`, () => {
      const chunks = relayed(includeUsage)
      expect(chunks.map((c) => [c.object, c.model])).toEqual(chunks.map(() => ['chat.completion.chunk', 'az/gpt']))
      expect(chunks[0].prompt_filter_results).toEqual(FILTER)
      for (const chunk of chunks) expect(openapiErrors('CreateChatCompletionStreamResponse', chunk)).toBeNull()
    })
})
