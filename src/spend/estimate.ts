import type { ModelPrice } from '../config/types'
import { maxInputPrice } from './price'

/** Output tokens assumed for a request that sets no limit of its own (max_tokens and the like). */
export const DEFAULT_OUTPUT_TOKENS = 4096
/** Input tokens a target may add to what the caller sent (a tool-use system prompt, message framing). */
export const INPUT_OVERHEAD_TOKENS = 1024

/** What a request may use at most, as far as it can be told before it is sent. */
export interface TokenBound {
  inputTokens: number
  outputTokens: number
}

/**
 * The input bound of a request body: one token per UTF-8 byte (a token is at least one byte of
 * text), plus the overhead above. Images and files sent by URL are counted by the upstream from
 * their pixels and pages, not their address: for those this is not a bound.
 */
export const inputBound = (text: string): number => Buffer.byteLength(text, 'utf8') + INPUT_OVERHEAD_TOKENS

/**
 * The cost a budget reserves for a request before it is sent, in nano-dollars: its token bound at
 * the most expensive of the prices it may be served at (any token of input at the dearest input
 * price, cache writes included), rounded up.
 */
export function estimateNanos(bound: TokenBound, prices: Iterable<ModelPrice>): number {
  let most = 0
  for (const price of prices) most = Math.max(most, bound.inputTokens * maxInputPrice(price) + bound.outputTokens * price.output)
  return Math.ceil(most / 1000)
}

/** Characters per token for English text and code: the usual rule of thumb, used only where no usage came. */
const CHARS_PER_TOKEN = 4
/** A run of base64 this long is an image or a file: counted as a flat number of tokens, not by its length. */
const BASE64_RUN = /[A-Za-z0-9+/]{512,}={0,2}/g
const TOKENS_PER_ATTACHMENT = 1000

/** Tokens in generated text, estimated from its length (a stream cut before the upstream reported usage). */
export const estimatedTokens = (chars: number): number => Math.ceil(chars / CHARS_PER_TOKEN)

/**
 * The prompt's tokens, estimated from the request body: its length at four characters a token, each
 * base64 attachment counted as a flat thousand. Only for streams cut before the upstream said.
 */
export function estimatedPromptTokens(body: string): number {
  let attachments = 0
  const text = body.replace(BASE64_RUN, () => {
    attachments++
    return ''
  })
  return estimatedTokens(text.length) + attachments * TOKENS_PER_ATTACHMENT
}
