import { type ChatCompletion, type ChatCompletionChunk, type ChatRequest, messageText, type StreamChunk, type Usage } from '../../chat/types'
import type { Provider, ProviderKind } from '../types'

/** Whitespace-separated words: the mock's stand-in for tokens. */
const countWords = (text: string) => text.split(/\s+/).filter(Boolean).length

function echoOf(request: ChatRequest): { answer: string; usage: Usage } {
  const lastUser = request.messages.findLast((m) => m.role === 'user')
  const answer = lastUser ? messageText(lastUser.content) : ''
  const prompt = request.messages.reduce((sum, m) => sum + countWords(messageText(m.content)), 0)
  const completion = countWords(answer)
  return { answer, usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } }
}

const completionId = () => `chatcmpl-mock-${crypto.randomUUID()}`

/** In-process, deterministic, offline: model `echo` answers with the last user message. */
function createMockProvider(): Provider {
  return {
    async complete(request) {
      const { answer, usage } = echoOf(request)
      const completion: ChatCompletion = {
        id: completionId(),
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: request.model,
        choices: [{ index: 0, message: { role: 'assistant', content: answer }, finish_reason: 'stop' }],
        usage,
      }
      return { completion, text: null }
    },

    async stream(request) {
      const { answer, usage } = echoOf(request)
      const id = completionId()
      const created = Math.floor(Date.now() / 1000)
      const chunk = (delta: ChatCompletionChunk['choices'][number]['delta'], finish: string | null): ChatCompletionChunk => ({
        id,
        object: 'chat.completion.chunk',
        created,
        model: request.model,
        choices: [{ index: 0, delta, finish_reason: finish }],
      })
      // Word by word, keeping the whitespace that follows each word so the pieces join back exactly.
      const pieces = answer.match(/\S+\s*|\s+/g) ?? []
      async function* chunks(): AsyncGenerator<StreamChunk[]> {
        yield [chunk({ role: 'assistant', content: '' }, null)]
        for (const piece of pieces) yield [chunk({ content: piece }, null)]
        yield [chunk({}, 'stop'), { id, object: 'chat.completion.chunk', created, model: request.model, choices: [], usage }]
      }
      return chunks()
    },
  }
}

export const mockKind: ProviderKind = {
  kind: 'mock',
  needsBaseUrl: false,
  defaultBaseUrl: null,
  models: ['echo'],
  create: createMockProvider,
}
