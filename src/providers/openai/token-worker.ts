/**
 * The tokenizer's thread (see tokens.ts): counts texts with o200k_base, off the server's event
 * loop. Its tables (about 100 MB) are loaded here, once per thread, never on the main thread.
 */
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base'

/** One job: the texts to count; the answer is their token counts summed, under the job's id. */
export interface TokenJob {
  id: number
  texts: string[]
}

export type TokenAnswer = { id: number; tokens: number } | { id: number; error: string }

// In a worker the global scope is the worker's own; Bun's types describe the main thread's.
const scope = globalThis as unknown as { onmessage: ((event: MessageEvent<TokenJob>) => void) | null; postMessage(answer: TokenAnswer): void }

scope.onmessage = ({ data: { id, texts } }) => {
  try {
    let tokens = 0
    for (const text of texts) tokens += countTokens(text)
    scope.postMessage({ id, tokens })
  } catch (error) {
    scope.postMessage({ id, error: (error as Error)?.message ?? String(error) })
  }
}
