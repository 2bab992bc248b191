/** OpenAI's embeddings API: the fields the gateway reads or writes. Open like the chat types. */

export interface EmbeddingsRequest {
  model: string
  /** A string, strings, a token array, or token arrays. */
  input: string | string[] | number[] | number[][]
  encoding_format?: 'float' | 'base64'
  dimensions?: number
  user?: string
  [field: string]: unknown
}

export interface Embedding {
  object: 'embedding'
  index: number
  /** Floats, or with `encoding_format: "base64"` the little-endian float32 bytes in base64. */
  embedding: number[] | string
}

export interface EmbeddingsResponse {
  object: 'list'
  data: Embedding[]
  model: string
  usage: { prompt_tokens: number; total_tokens: number }
  [field: string]: unknown
}

/** The inputs one by one: a string or a token array each. */
export function inputsOf(input: EmbeddingsRequest['input']): (string | number[])[] {
  if (typeof input === 'string') return [input]
  if (input.length > 0 && typeof input[0] === 'number') return [input as number[]]
  return input as (string | number[])[]
}

/** Floats as OpenAI's base64 encoding: little-endian float32. */
export const base64Floats = (values: number[]): string => Buffer.from(new Float32Array(values).buffer).toString('base64')
