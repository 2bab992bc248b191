import type { AssistantMessage, ChatCompletion, ChatCompletionChunk, ChatRequest, ChunkDelta, FunctionTool, StreamChunk, Usage } from '../../wire/pivot/types'
import { messageText } from '../../wire/pivot/types'
import type { Unsupported } from '../../errors'
import { base64Floats, type Embedding, inputsOf } from '../../wire/openai-embeddings/types'
import type { Provider, ProviderKind } from '../types'

/** Whitespace-separated words: the mock's stand-in for tokens. */
const countWords = (text: string) => text.split(/\s+/).filter(Boolean).length

/**
 * The tool the mock calls: with `tools` and a `tool_choice` of `required` (the first tool) or a named
 * function (that one). Otherwise it answers in text, so an agent loop that sends the tool result
 * back without forcing a tool gets its answer.
 */
function toolToCall(request: ChatRequest): string | null {
  const tools = (request.tools ?? []).filter((tool): tool is FunctionTool => tool.type === 'function')
  const choice = request.tool_choice
  if (tools.length === 0) return null
  if (choice === 'required') return tools[0]!.function.name
  if (typeof choice === 'object' && choice !== null && choice.type === 'function') return (choice as { function: { name: string } }).function.name
  return null
}

/** `[[tool:NAME {json arguments}]]` in a user message: the mock calls NAME with those arguments (agent loops, offline). */
const TOOL_DIRECTIVE = /\[\[tool:([\w.:-]+)(?:\s+(\{[\s\S]*?\}))?\]\]/

/**
 * The call a user message asks the mock for with a tool directive, while no tool result has come
 * back since that message, and only a tool the request offers; with it, the user text the mock
 * echoes (the directive taken out).
 */
function directedCall(request: ChatRequest): { call: { name: string; args: string } | null; text: string } | null {
  const at = request.messages.findLastIndex((m) => m.role === 'user' && TOOL_DIRECTIVE.test(messageText(m.content)))
  if (at === -1) return null
  const text = messageText(request.messages[at]!.content)
  const [directive, name, args = '{}'] = TOOL_DIRECTIVE.exec(text)!
  const answered = request.messages.slice(at + 1).some((m) => m.role === 'tool')
  const offered = (request.tools ?? []).some((tool) => tool.type === 'function' && (tool as FunctionTool).function.name === name)
  const echo = text.replace(directive, '').trim()
  return { call: answered || !offered ? null : { name: name!, args: isJsonObject(args) ? args : '{}' }, text: echo }
}

function isJsonObject(text: string): boolean {
  try {
    const value = JSON.parse(text) as unknown
    return typeof value === 'object' && value !== null && !Array.isArray(value)
  } catch {
    return false
  }
}

interface MockAnswer {
  content: string | null
  tool: { id: string; name: string; args: string } | null
  usage: Usage
}

function answerOf(request: ChatRequest): MockAnswer {
  const prompt = request.messages.reduce((sum, m) => sum + countWords(messageText(m.content)), 0)
  const directed = directedCall(request)
  const forced = toolToCall(request)
  const tool = forced !== null ? { name: forced, args: '{}' } : (directed?.call ?? null)
  if (tool !== null) {
    // Deterministic: the id counts the calls already in the conversation.
    const calls = request.messages.reduce((sum, m) => sum + (m.tool_calls?.length ?? 0), 0)
    return {
      content: null,
      tool: { id: `call_mock_${calls + 1}`, ...tool },
      usage: { prompt_tokens: prompt, completion_tokens: 1, total_tokens: prompt + 1 },
    }
  }
  const lastUser = request.messages.findLast((m) => m.role === 'user')
  const content = directed?.text ?? (lastUser ? messageText(lastUser.content) : '')
  const completion = countWords(content)
  return { content, tool: null, usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } }
}

const completionId = () => `chatcmpl-mock-${crypto.randomUUID()}`

/** The mock's embeddings are this long unless `dimensions` says otherwise. */
export const MOCK_EMBEDDING_DIMENSIONS = 8

/**
 * A deterministic unit vector for an input: SHA-256 of the input (and a counter, for more than 32
 * bytes) read as numbers in [-1, 1], then normalized. Same input, same vector; different inputs,
 * different vectors.
 */
function mockVector(input: string | number[], dimensions: number): number[] {
  const text = typeof input === 'string' ? input : input.join(',')
  const values: number[] = []
  for (let block = 0; values.length < dimensions; block++) {
    const bytes = new Bun.CryptoHasher('sha256').update(`${block}:${text}`).digest()
    for (const byte of bytes) if (values.length < dimensions) values.push(byte / 127.5 - 1)
  }
  const norm = Math.hypot(...values) || 1
  return values.map((v) => v / norm)
}

const wrongModel = (model: string, serves: string): Unsupported => ({
  code: 'unsupported_parameter',
  param: 'model',
  message: `The mock's model "${model}" serves ${serves}`,
})

/**
 * In-process, deterministic, offline. Model `echo` answers with the last user message, or calls the
 * tool it is made to (a forcing tool_choice, or a `[[tool:NAME {args}]]` directive in the user's
 * text); model `embed` returns deterministic embeddings.
 */
function createMockProvider(): Provider {
  return {
    cannotServe: (request) => (request.model === 'embed' ? wrongModel('embed', 'embeddings, not chat') : null),
    cannotEmbed: (model) => (model === 'embed' ? null : wrongModel(model, 'chat, not embeddings')),

    // The mock's tokens are words, as in its usage.
    countTokens: async (request) => request.messages.reduce((sum, m) => sum + countWords(messageText(m.content)), 0),

    async embed(request) {
      const dimensions = request.dimensions ?? MOCK_EMBEDDING_DIMENSIONS
      const inputs = inputsOf(request.input)
      const data = inputs.map((input, index): Embedding => {
        const vector = mockVector(input, dimensions)
        return { object: 'embedding', index, embedding: request.encoding_format === 'base64' ? base64Floats(vector) : vector }
      })
      const tokens = inputs.reduce((sum, input) => sum + (typeof input === 'string' ? countWords(input) : input.length), 0)
      return { answer: { object: 'list', data, model: request.model, usage: { prompt_tokens: tokens, total_tokens: tokens } }, text: null }
    },

    async complete(request) {
      const answer = answerOf(request)
      const message: AssistantMessage = { role: 'assistant', content: answer.content, refusal: null }
      if (answer.tool) message.tool_calls = [{ id: answer.tool.id, type: 'function', function: { name: answer.tool.name, arguments: answer.tool.args } }]
      const completion: ChatCompletion = {
        id: completionId(),
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: request.model,
        choices: [{ index: 0, message, logprobs: null, finish_reason: answer.tool ? 'tool_calls' : 'stop' }],
        usage: answer.usage,
      }
      return { completion, text: null }
    },

    async stream(request) {
      const answer = answerOf(request)
      const id = completionId()
      const created = Math.floor(Date.now() / 1000)
      const chunk = (delta: ChunkDelta, finish: string | null): ChatCompletionChunk => ({
        id,
        object: 'chat.completion.chunk',
        created,
        model: request.model,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      })
      async function* chunks(): AsyncGenerator<StreamChunk[]> {
        yield [chunk({ role: 'assistant', content: '' }, null)]
        if (answer.tool) {
          const { id: callId, name, args } = answer.tool
          yield [chunk({ tool_calls: [{ index: 0, id: callId, type: 'function', function: { name, arguments: '' } }] }, null)]
          yield [chunk({ tool_calls: [{ index: 0, function: { arguments: args } }] }, null)]
        } else {
          // Word by word, keeping the whitespace that follows each word so the pieces join back exactly.
          for (const piece of answer.content?.match(/\S+\s*|\s+/g) ?? []) yield [chunk({ content: piece }, null)]
        }
        yield [
          chunk({}, answer.tool ? 'tool_calls' : 'stop'),
          { id, object: 'chat.completion.chunk', created, model: request.model, choices: [], usage: answer.usage },
        ]
      }
      return chunks()
    },
  }
}

export const mockKind: ProviderKind = {
  kind: 'mock',
  needsBaseUrl: false,
  defaultBaseUrl: null,
  models: ['echo', 'embed'],
  create: createMockProvider,
}
