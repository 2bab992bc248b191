/** What the translations between the pivot and Bedrock's Converse share, both ways. */
import type { Unsupported } from '../../errors'
import type * as OpenAI from '../pivot/types'
import type * as Bedrock from './types'

export const DATA_URL = /^data:([^;,]+);base64,(.*)$/s

/** Image media types as Converse names their formats. */
export const IMAGE_FORMATS: ReadonlyMap<string, Bedrock.ImageFormat> = new Map([
  ['image/png', 'png'],
  ['image/jpeg', 'jpeg'],
  ['image/jpg', 'jpeg'],
  ['image/gif', 'gif'],
  ['image/webp', 'webp'],
])

/** Document media types as Converse names their formats (API_runtime_DocumentBlock). */
export const DOCUMENT_FORMATS: ReadonlyMap<string, Bedrock.DocumentFormat> = new Map([
  ['application/pdf', 'pdf'],
  ['text/csv', 'csv'],
  ['application/msword', 'doc'],
  ['application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'docx'],
  ['application/vnd.ms-excel', 'xls'],
  ['application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', 'xlsx'],
  ['text/html', 'html'],
  ['text/plain', 'txt'],
  ['text/markdown', 'md'],
])

/** Thinking budgets for OpenAI's `reasoning_effort` on Claude (as for Anthropic's own API); `none` and `minimal` mean no thinking. */
export const THINKING_BUDGETS: ReadonlyMap<string, number> = new Map([
  ['low', 1024],
  ['medium', 4096],
  ['high', 16384],
  ['xhigh', 32768],
  ['max', 32768],
])

/** Converse requires maxTokens for Claude with thinking; callers usually omit it. */
export const DEFAULT_MAX_TOKENS = 4096

/**
 * Whether a model id (a base model, a cross-region inference profile such as `us.anthropic.claude-…`,
 * or a profile's ARN) is Claude: only Claude takes `thinking` and signed reasoning back.
 */
export const isClaude = (modelId: string): boolean => /anthropic\.claude/.test(modelId)

/** Converse tool-use ids are [a-zA-Z0-9_-]+; other providers' ids are mapped the same way on both sides of a turn. */
export const toolUseId = (id: string): string => id.replace(/[^A-Za-z0-9_-]/g, '_') || 'call'

export const cannot = (code: Unsupported['code'], param: string, message: string): Unsupported => ({ code, param, message })

const FINISH_REASONS: ReadonlyMap<string, string> = new Map([
  ['end_turn', 'stop'],
  ['stop_sequence', 'stop'],
  ['max_tokens', 'length'],
  ['model_context_window_exceeded', 'length'],
  ['tool_use', 'tool_calls'],
  // A guardrail or the model's own filter stopped it: what OpenAI calls content_filter, which every
  // other dialect then says its way (messages `refusal`, responses `incomplete`).
  ['guardrail_intervened', 'content_filter'],
  ['content_filtered', 'content_filter'],
])

/** OpenAI's finish_reason for a Converse stopReason. */
export const finishReason = (stop: string | null | undefined): string => FINISH_REASONS.get(stop ?? '') ?? 'stop'

/** Converse usage as OpenAI's: prompt tokens are all the input, cache reads and writes included; reads are also `cached_tokens`. */
export function toUsage(usage: Partial<Bedrock.TokenUsage> | undefined): OpenAI.Usage {
  const read = usage?.cacheReadInputTokens ?? 0
  const written = usage?.cacheWriteInputTokens ?? 0
  const prompt = (usage?.inputTokens ?? 0) + read + written
  const completion = usage?.outputTokens ?? 0
  const out: OpenAI.Usage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: read },
  }
  if (written > 0) out.cache_creation_input_tokens = written
  return out
}
