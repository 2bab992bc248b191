/**
 * OpenAI's embeddings on Bedrock, through InvokeModel (POST /model/{modelId}/invoke) with each model
 * family's own body (Bedrock user guide, "Amazon Titan Embeddings Text" and "Cohere Embed" model
 * parameters): Titan embeds one text per call, Cohere a list. The input token count comes from the
 * `X-Amzn-Bedrock-Input-Token-Count` header InvokeModel answers with (Titan also says it in its body).
 */
import { invalidRequest, type Unsupported } from '../../errors'
import { base64Floats, type Embedding, type EmbeddingsRequest, type EmbeddingsResponse, inputsOf } from '../../wire/openai-embeddings/types'
import { protocolViolation } from '../errors'
import { readJson } from '../http'
import type { AttemptContext, Embedded } from '../types'

const TITAN = /amazon\.titan-embed-text/
const COHERE = /cohere\.embed-/

export const isEmbeddingModel = (modelId: string): boolean => TITAN.test(modelId) || COHERE.test(modelId)

export function cannotEmbed(modelId: string): Unsupported | null {
  if (isEmbeddingModel(modelId)) return null
  return { code: 'unsupported_parameter', param: 'model', message: `Bedrock model "${modelId}" is not a Titan or Cohere text embedding model` }
}

/** Posts one InvokeModel body and reads its JSON answer. */
export type Invoke = (body: string, attempt: AttemptContext) => Promise<Response>

/** Titan takes at most this many calls at once for one request's inputs. */
const TITAN_CONCURRENCY = 8

const tokensOf = (response: Response, fallback: unknown): number => {
  const header = Number(response.headers.get('x-amzn-bedrock-input-token-count'))
  if (Number.isFinite(header) && header > 0) return header
  return typeof fallback === 'number' ? fallback : 0
}

function texts(request: EmbeddingsRequest): string[] {
  const inputs = inputsOf(request.input)
  if (inputs.some((input) => typeof input !== 'string')) throw invalidRequest('Bedrock embedding models take text, not token arrays', { param: 'input' })
  return inputs as string[]
}

async function titan(name: string, request: EmbeddingsRequest, invoke: Invoke, attempt: AttemptContext, maxBytes: number) {
  const inputs = texts(request)
  const vectors: number[][] = new Array(inputs.length)
  let tokens = 0
  for (let start = 0; start < inputs.length; start += TITAN_CONCURRENCY) {
    const slice = inputs.slice(start, start + TITAN_CONCURRENCY)
    await Promise.all(
      slice.map(async (inputText, j) => {
        const body = { inputText, ...(request.dimensions ? { dimensions: request.dimensions } : {}) }
        const response = await invoke(JSON.stringify(body), attempt)
        const { body: answer } = await readJson(name, response, attempt.signal, maxBytes)
        const { embedding, inputTextTokenCount } = answer as { embedding?: unknown; inputTextTokenCount?: unknown }
        if (!Array.isArray(embedding)) throw protocolViolation(name, 'a Titan answer has no embedding')
        vectors[start + j] = embedding as number[]
        tokens += tokensOf(response, inputTextTokenCount)
      }),
    )
  }
  return { vectors, tokens }
}

async function cohere(name: string, request: EmbeddingsRequest, invoke: Invoke, attempt: AttemptContext, maxBytes: number) {
  if (request.dimensions !== undefined && request.dimensions !== 1024)
    throw invalidRequest('Cohere Embed v3 on Bedrock makes 1024 dimensions only', { param: 'dimensions' })
  // OpenAI's API has no input type: what is embedded is taken as documents, the common case.
  const body = { texts: texts(request), input_type: 'search_document', embedding_types: ['float'] }
  const response = await invoke(JSON.stringify(body), attempt)
  const { body: answer } = await readJson(name, response, attempt.signal, maxBytes)
  const embeddings = (answer as { embeddings?: unknown }).embeddings
  // `embeddings_by_type` answers keep the floats under `float`; `embeddings_floats` ones are the list itself.
  const vectors = Array.isArray(embeddings) ? embeddings : (embeddings as { float?: unknown } | undefined)?.float
  if (!Array.isArray(vectors)) throw protocolViolation(name, 'a Cohere answer has no embeddings')
  return { vectors: vectors as number[][], tokens: tokensOf(response, undefined) }
}

/** Embeddings for `request` (its model the Bedrock model id), in OpenAI's shape. */
export async function bedrockEmbed(name: string, request: EmbeddingsRequest, invoke: Invoke, attempt: AttemptContext, maxBytes: number): Promise<Embedded> {
  const { vectors, tokens } = TITAN.test(request.model)
    ? await titan(name, request, invoke, attempt, maxBytes)
    : await cohere(name, request, invoke, attempt, maxBytes)
  const data: Embedding[] = vectors.map((vector, index) => ({
    object: 'embedding',
    index,
    embedding: request.encoding_format === 'base64' ? base64Floats(vector) : vector,
  }))
  const answer: EmbeddingsResponse = { object: 'list', data, model: request.model, usage: { prompt_tokens: tokens, total_tokens: tokens } }
  return { answer, text: null }
}
