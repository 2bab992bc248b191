/** OpenAI chat completion wire types, reduced to the fields the gateway reads or writes. */

export interface TextPart {
  type: 'text'
  text: string
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'developer' | 'tool'
  content: string | TextPart[] | null
  [field: string]: unknown
}

export interface ChatRequest {
  model: string
  messages: ChatMessage[]
  temperature?: number
  max_tokens?: number
  max_completion_tokens?: number
  stream?: boolean
  stream_options?: { include_usage?: boolean; [field: string]: unknown } | null
  [field: string]: unknown
}

export interface Usage {
  prompt_tokens: number
  completion_tokens: number
  total_tokens: number
  [field: string]: unknown
}

export interface ChatCompletion {
  id: string
  object: 'chat.completion'
  created: number
  model: string
  choices: {
    index: number
    message: { role: 'assistant'; content: string | null; [field: string]: unknown }
    finish_reason: string | null
    [field: string]: unknown
  }[]
  usage: Usage
  [field: string]: unknown
}

export interface ChatCompletionChunk {
  id: string
  object: 'chat.completion.chunk'
  created: number
  model: string
  choices: {
    index: number
    delta: { role?: 'assistant'; content?: string | null; [field: string]: unknown }
    finish_reason: string | null
    [field: string]: unknown
  }[]
  usage?: Usage | null
  [field: string]: unknown
}

/** A chunk exactly as an OpenAI-compatible upstream serialized it: relayed without re-encoding. */
export interface RawChunk {
  data: string
}

/** What a provider's stream yields, in batches (one per network read). */
export type StreamChunk = ChatCompletionChunk | RawChunk

/** Text of a message: a string as is, text parts joined, anything else empty. */
export function messageText(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content
  if (Array.isArray(content)) return content.map((part) => (part.type === 'text' ? part.text : '')).join('')
  return ''
}
