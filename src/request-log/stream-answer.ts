/**
 * A streamed answer put together from the caller's SSE events, as the JSON answer the same request
 * would have had without `stream`: the request log keeps that, never the raw events. Each inbound
 * API streams its own events (chat completion chunks, Anthropic's message events, the Responses
 * API's events, Gemini's partial answers). Text past `maxChars` is dropped as it comes (the kept
 * body is cut there anyway), so a long stream costs bounded memory.
 */

type Json = Record<string, any>

interface Assembler {
  event(data: Json): void
  answer(): unknown
}

/** Appends to a string member, up to the bound. */
function append(target: Json, key: string, text: unknown, maxChars: number): void {
  if (typeof text !== 'string') return
  const now = (target[key] as string | undefined) ?? ''
  if (now.length < maxChars) target[key] = now + text.slice(0, maxChars - now.length)
}

/** OpenAI chat completion chunks: deltas per choice, tool call arguments per index. */
function chatAssembler(maxChars: number): Assembler {
  let head: Json = {}
  const choices: Json[] = []
  let usage: unknown = null
  return {
    event(chunk) {
      if (head.id === undefined) head = { id: chunk.id, object: 'chat.completion', created: chunk.created, model: chunk.model }
      if (chunk.usage) usage = chunk.usage
      for (const c of (chunk.choices as Json[] | undefined) ?? []) {
        const choice = (choices[c.index ?? 0] ??= { index: c.index ?? 0, message: { role: 'assistant', content: null }, finish_reason: null })
        const delta = (c.delta ?? {}) as Json
        const message = choice.message as Json
        for (const key of ['content', 'reasoning_content', 'reasoning', 'refusal'])
          if (typeof delta[key] === 'string') append(message, key, delta[key], maxChars)
        for (const call of (delta.tool_calls as Json[] | undefined) ?? []) {
          const calls = (message.tool_calls ??= []) as Json[]
          const kept = (calls[call.index ?? 0] ??= { id: call.id, type: 'function', function: { name: '', arguments: '' } })
          if (call.id) kept.id = call.id
          append(kept.function, 'name', call.function?.name, maxChars)
          append(kept.function, 'arguments', call.function?.arguments, maxChars)
        }
        if (c.finish_reason) choice.finish_reason = c.finish_reason
      }
    },
    answer: () => ({ ...head, choices: choices.filter(Boolean), usage }),
  }
}

/** Anthropic's events: the message, its content blocks and their deltas, the final stop reason and usage. */
function messagesAssembler(maxChars: number): Assembler {
  let message: Json = {}
  const blocks: Json[] = []
  return {
    event(event) {
      if (event.type === 'message_start') message = { ...event.message }
      else if (event.type === 'content_block_start') blocks[event.index] = { ...event.content_block }
      else if (event.type === 'content_block_delta') {
        const block = blocks[event.index] ?? (blocks[event.index] = {})
        const delta = event.delta as Json
        if (delta.type === 'text_delta') append(block, 'text', delta.text, maxChars)
        else if (delta.type === 'thinking_delta') append(block, 'thinking', delta.thinking, maxChars)
        else if (delta.type === 'input_json_delta') append(block, 'partial_json', delta.partial_json, maxChars)
        else if (delta.type === 'signature_delta') block.signature = delta.signature
      } else if (event.type === 'message_delta') {
        message = { ...message, ...event.delta, usage: { ...message.usage, ...event.usage } }
      }
    },
    answer() {
      const content = blocks.filter(Boolean).map(({ partial_json, ...block }) => {
        if (partial_json === undefined) return block
        try {
          return { ...block, input: JSON.parse(partial_json) }
        } catch {
          return { ...block, input: partial_json }
        }
      })
      return { ...message, content }
    },
  }
}

/** The Responses API: its last event carrying the whole response (response.completed, .incomplete, .failed). */
function responsesAssembler(): Assembler {
  let response: unknown = null
  return {
    event(event) {
      if (event.response && typeof event.response === 'object') response = event.response
    },
    answer: () => response,
  }
}

/** Gemini's partial answers: each candidate's text parts joined, other parts kept, the last finish reason and usage. */
function geminiAssembler(maxChars: number): Assembler {
  let answer: Json = {}
  const candidates: Json[] = []
  return {
    event(chunk) {
      const { candidates: parts, ...rest } = chunk
      answer = { ...answer, ...rest }
      for (const c of (parts as Json[] | undefined) ?? []) {
        const kept = (candidates[c.index ?? 0] ??= { index: c.index ?? 0, content: { role: 'model', parts: [] } })
        const keptParts = kept.content.parts as Json[]
        for (const part of (c.content?.parts as Json[] | undefined) ?? []) {
          const last = keptParts.at(-1)
          if (typeof part.text === 'string' && last && typeof last.text === 'string' && last.thought === part.thought) append(last, 'text', part.text, maxChars)
          else keptParts.push({ ...part })
        }
        if (c.finishReason) kept.finishReason = c.finishReason
      }
    },
    answer: () => ({ candidates: candidates.filter(Boolean), ...answer }),
  }
}

function assemblerFor(api: string | undefined, maxChars: number): Assembler {
  if (api === 'chat.completions') return chatAssembler(maxChars)
  if (api === 'messages') return messagesAssembler(maxChars)
  if (api === 'responses') return responsesAssembler()
  return geminiAssembler(maxChars)
}

/** Puts a stream's answer together from the caller's SSE text, fed as it is sent. */
export class StreamAnswer {
  private readonly assembler: Assembler
  /** An event split over two pieces of text. */
  private rest = ''

  constructor(api: string | undefined, maxChars: number) {
    this.assembler = assemblerFor(api, maxChars)
  }

  push(text: string): void {
    const lines = (this.rest + text).split('\n')
    this.rest = lines.pop()!
    for (const line of lines) {
      if (!line.startsWith('data:')) continue
      const data = line.slice(line[5] === ' ' ? 6 : 5)
      if (data === '[DONE]') continue
      try {
        const event = JSON.parse(data) as unknown
        if (event && typeof event === 'object' && !Array.isArray(event)) this.assembler.event(event as Json)
      } catch {
        // Not JSON (a comment, a keep-alive): nothing of the answer.
      }
    }
  }

  /** The answer so far, as JSON text. */
  json(): string {
    return JSON.stringify(this.assembler.answer())
  }
}
