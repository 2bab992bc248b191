import { GatewayError } from '../errors'
import type { JsonBody } from '../wire/json-text'
import type { Target } from '../routing/table'
import { openaiErrorBody } from '../wire/openai/errors'
import { ChunkRelay, completionJson } from '../wire/openai/relay'
import type { ChatRequest, StreamChunk } from '../wire/openai/types'
import { DEFAULT_OUTPUT_TOKENS, estimatedPromptTokens, inputBound } from '../spend/estimate'
import { generatedChars } from '../wire/openai/generated'
import type { EventStream, Exchange } from './exchange'

const DONE = 'data: [DONE]\n\n'

/** An upstream's chunk batches as the caller's OpenAI SSE text. */
export async function relayChunks(iterator: AsyncIterator<StreamChunk[]>, relay: ChunkRelay): Promise<EventStream> {
  // The first batch is read now: a failure before it is a failed attempt, still retried or failed over.
  let pending: IteratorResult<StreamChunk[]> | null = await iterator.next()
  let generated = 0
  return {
    async next() {
      const result: IteratorResult<StreamChunk[]> = pending ?? (await iterator.next())
      pending = null
      if (result.done) return null
      generated += generatedChars(result.value)
      return relay.wire(result.value)
    },
    usage: () => relay.usage,
    generated: () => generated,
    end: () => DONE,
    cancel: async () => void (await iterator.return?.()),
  }
}

/** OpenAI's chat completions, served by any target: OpenAI-compatible ones get the caller's own text. */
export function chatExchange(request: ChatRequest, body: JsonBody | undefined): Exchange {
  const forTarget = (target: Target): ChatRequest => ({ ...request, model: target.model })
  return {
    model: request.model,
    cannotServe(target) {
      // Most providers serve anything: no copy of the request for them.
      const check = target.provider.cannotServe
      return check ? check(forTarget(target)) : null
    },
    async complete(target, attempt) {
      const { completion, text } = await target.provider.complete(forTarget(target), attempt, body)
      return { body: completionJson(completion, text, request.model), usage: completion.usage ?? null }
    },
    stream:
      request.stream === true
        ? {
            async open(target, attempt) {
              const iterator = await target.provider.stream(forTarget(target), attempt, body)
              return relayChunks(iterator, new ChunkRelay(request.model, request.stream_options?.include_usage === true))
            },
            failureEvent: (error: GatewayError) => `data: ${JSON.stringify(openaiErrorBody(error))}\n\n`,
            estimatedPromptTokens: () => estimatedPromptTokens(body?.text ?? JSON.stringify(request)),
          }
        : null,
    tokenBound: () => ({
      inputTokens: inputBound(body?.text ?? JSON.stringify(request)),
      outputTokens: Number(request.max_completion_tokens ?? request.max_tokens ?? DEFAULT_OUTPUT_TOKENS),
    }),
  }
}
