import type { ChatRequest } from '../../wire/openai/types'

/** Tokens OpenAI's chat format adds per message, and to prime the reply (as tiktoken's cookbook counts them). */
const PER_MESSAGE = 3
const REPLY_PRIMING = 3
/** An image in low detail, OpenAI's documented floor; images are not text, so this is an estimate. */
const PER_IMAGE = 85

type CountTokens = (text: string) => number
let counter: Promise<CountTokens> | null = null

/** o200k_base (GPT-4o and later), from gpt-tokenizer: loaded on first use, since its tables take ~90 MB. */
const o200k = (): Promise<CountTokens> => (counter ??= import('gpt-tokenizer/encoding/o200k_base').then((module) => module.countTokens as CountTokens))

/**
 * The input tokens of a chat request as OpenAI's o200k tokenizer counts them: every message's role,
 * text and tool calls, with the chat format's per-message overhead, the tool definitions, and an
 * estimate for images.
 */
export async function countChatTokens(request: ChatRequest): Promise<number> {
  const count = await o200k()
  let tokens = REPLY_PRIMING
  for (const message of request.messages) {
    tokens += PER_MESSAGE + count(message.role)
    if (typeof message.content === 'string') tokens += count(message.content)
    else if (Array.isArray(message.content)) {
      for (const part of message.content) {
        if (part.type === 'text') tokens += count(String(part.text))
        else if (part.type === 'image_url') tokens += PER_IMAGE
      }
    }
    for (const call of message.tool_calls ?? []) tokens += count(call.function.name) + count(call.function.arguments)
  }
  if (request.tools && request.tools.length > 0) tokens += count(JSON.stringify(request.tools))
  return tokens
}
