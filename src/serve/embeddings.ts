import type { JsonBody } from '../wire/json-text'
import { withTopLevelValue } from '../wire/json-text'
import type { EmbeddingsRequest } from '../wire/openai-embeddings/types'
import { inputBound } from '../spend/estimate'
import type { Exchange } from './exchange'

/**
 * OpenAI's embeddings API: OpenAI-compatible upstreams get the caller's text, only its model
 * replaced, and their answer comes back the same way; the mock's `embed` model answers itself;
 * kinds without embeddings (Anthropic) are skipped. Usage is the input tokens.
 */
export function embeddingsExchange(request: EmbeddingsRequest, body: JsonBody | undefined): Exchange {
  return {
    model: request.model,
    cannotServe: (target) =>
      target.provider.embed
        ? (target.provider.cannotEmbed?.(target.model) ?? null)
        : { code: 'unsupported_parameter', param: 'model', message: `Upstream "${target.upstream.name}" (kind ${target.upstream.kind}) serves no embeddings` },
    async complete(target, attempt) {
      const { answer, text } = await target.provider.embed!({ ...request, model: target.model }, attempt, body)
      const alias = JSON.stringify(request.model)
      const relayed = text !== null && typeof answer.model === 'string' ? withTopLevelValue(text, 'model', JSON.stringify(answer.model), alias) : null
      const prompt = answer.usage?.prompt_tokens ?? 0
      return {
        body: relayed ?? JSON.stringify({ ...answer, model: request.model }),
        usage: { prompt_tokens: prompt, completion_tokens: 0, total_tokens: prompt },
      }
    },
    stream: null,
    tokenBound: () => ({ inputTokens: inputBound(body?.text ?? JSON.stringify(request)), outputTokens: 0 }),
    cache: { request, text: body?.text },
  }
}
