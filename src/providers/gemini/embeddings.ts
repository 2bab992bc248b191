/**
 * OpenAI's embeddings API on Google's: `:batchEmbedContents` on the Gemini API
 * (https://ai.google.dev/api/embeddings), `:predict` with instances on Vertex AI's embedding models
 * (https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/text-embeddings-api).
 */
import { invalidRequest, type Unsupported } from '../../errors'
import type { BatchEmbedContentsRequest, PredictEmbeddingsRequest } from '../../wire/gemini/types'
import { base64Floats, type EmbeddingsRequest, type EmbeddingsResponse, inputsOf } from '../../wire/openai-embeddings/types'

/** Google's embedding models are named so (gemini-embedding-001, text-embedding-005, text-multilingual-embedding-002). */
export const isEmbeddingModel = (model: string): boolean => /embedding/i.test(model)

export const notEmbeddingModel = (upstream: string, model: string): Unsupported => ({
  code: 'unsupported_parameter',
  param: 'model',
  message: `Upstream "${upstream}" model "${model}" is not an embedding model`,
})

export const embeddingModelForChat = (upstream: string, model: string): Unsupported => ({
  code: 'unsupported_parameter',
  param: 'model',
  message: `Upstream "${upstream}" model "${model}" is an embedding model, not a chat model`,
})

/** The inputs as text: Google embeds text, so token arrays are the caller's to decode first. */
export function textInputs(request: EmbeddingsRequest): string[] {
  return inputsOf(request.input).map((input, i) => {
    if (typeof input === 'string') return input
    throw invalidRequest('Google embedding models take text, not token arrays', { param: `input.${i}`, code: 'unsupported_content' })
  })
}

export function batchEmbedRequest(texts: string[], request: EmbeddingsRequest): BatchEmbedContentsRequest {
  return {
    requests: texts.map((text) => ({
      model: `models/${request.model}`,
      content: { parts: [{ text }] },
      ...(typeof request.dimensions === 'number' ? { outputDimensionality: request.dimensions } : {}),
    })),
  }
}

export function predictRequest(texts: string[], request: EmbeddingsRequest): PredictEmbeddingsRequest {
  const out: PredictEmbeddingsRequest = { instances: texts.map((content) => ({ content })) }
  if (typeof request.dimensions === 'number') out.parameters = { outputDimensionality: request.dimensions }
  return out
}

/** An estimate of the input's tokens, for the Gemini API, whose embeddings answer says none: four characters a token. */
export const estimatedTokens = (texts: string[]): number => texts.reduce((sum, text) => sum + Math.ceil(text.length / 4), 0)

/** The vectors as OpenAI's answer: floats, or with `encoding_format: "base64"` little-endian float32 in base64. */
export function embeddingsAnswer(vectors: number[][], request: EmbeddingsRequest, tokens: number): EmbeddingsResponse {
  return {
    object: 'list',
    data: vectors.map((vector, index) => ({
      object: 'embedding',
      index,
      embedding: request.encoding_format === 'base64' ? base64Floats(vector) : vector,
    })),
    model: request.model,
    usage: { prompt_tokens: tokens, total_tokens: tokens },
  }
}
