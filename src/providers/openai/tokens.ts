import { availableParallelism } from 'node:os'
import type { ChatRequest } from '../../wire/pivot/types'
import { TokenizerPool } from './tokenizer-pool'
import { pathToFileURL } from 'node:url'
import { fromRoot } from '../../root'

/** Tokens OpenAI's chat format adds per message, and to prime the reply (as tiktoken's cookbook counts them). */
const PER_MESSAGE = 3
const REPLY_PRIMING = 3
/** An image in low detail, OpenAI's documented floor; images are not text, so this is an estimate. */
const PER_IMAGE = 85

/**
 * o200k_base (GPT-4o and later), from gpt-tokenizer, in worker threads: one per core but the
 * event loop's, two at most (each holds the tables, about 100 MB).
 */
const POOL_SIZE = Math.min(2, Math.max(1, availableParallelism() - 1))
let pool: TokenizerPool | null = null
const tokenizer = (): TokenizerPool => (pool ??= new TokenizerPool(pathToFileURL(fromRoot('src/providers/openai/token-worker.ts')), POOL_SIZE))

/**
 * What of a chat request the tokenizer reads (every message's role, text and tool calls, and the
 * tool definitions), and the tokens counted without it (the chat format's overhead, images).
 */
export function chatTokenParts(request: ChatRequest): { texts: string[]; fixed: number } {
  const texts: string[] = []
  let fixed = REPLY_PRIMING
  for (const message of request.messages) {
    fixed += PER_MESSAGE
    texts.push(message.role)
    if (typeof message.content === 'string') texts.push(message.content)
    else if (Array.isArray(message.content)) {
      for (const part of message.content) {
        if (part.type === 'text') texts.push(String(part.text))
        else if (part.type === 'image_url') fixed += PER_IMAGE
      }
    }
    for (const call of message.tool_calls ?? []) texts.push(call.function.name, call.function.arguments)
  }
  if (request.tools && request.tools.length > 0) texts.push(JSON.stringify(request.tools))
  return { texts, fixed }
}

/**
 * The input tokens of a chat request as OpenAI's o200k tokenizer counts them, with the chat
 * format's per-message overhead and an estimate for images. Counted in a worker thread: a large
 * prompt takes the tokenizer tens of milliseconds per 100 KB, which would stall every other
 * request on the event loop.
 */
export async function countChatTokens(request: ChatRequest): Promise<number> {
  const { texts, fixed } = chatTokenParts(request)
  return fixed + (await tokenizer().count(texts))
}
