/** Usage and stop reasons, OpenAI's and Anthropic's, each way. */
import type * as OpenAI from '../pivot/types'
import type * as Anthropic from './types'

const FINISH_REASONS = new Map([
  ['end_turn', 'stop'],
  ['stop_sequence', 'stop'],
  ['max_tokens', 'length'],
  ['model_context_window_exceeded', 'length'],
  ['tool_use', 'tool_calls'],
  ['refusal', 'content_filter'],
  ['pause_turn', 'stop'],
])

/** OpenAI's finish_reason for an Anthropic stop_reason; `tool_use` answered through the JSON tool alone is a plain stop. */
export function finishReason(stopReason: string | null | undefined, calledCallerTools = true): string | null {
  if (!stopReason) return null
  if (stopReason === 'tool_use' && !calledCallerTools) return 'stop'
  return FINISH_REASONS.get(stopReason) ?? 'stop'
}

/** Prompt tokens include cache writes and reads: all of them are input. Cache reads are also `cached_tokens`. */
export function toUsage(usage: Partial<Anthropic.Usage>): OpenAI.Usage {
  const cacheRead = usage.cache_read_input_tokens ?? 0
  const cacheWrite = usage.cache_creation_input_tokens ?? 0
  const prompt = (usage.input_tokens ?? 0) + cacheWrite + cacheRead
  const completion = usage.output_tokens ?? 0
  const out: OpenAI.Usage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cacheRead },
  }
  if (cacheWrite > 0) out.cache_creation_input_tokens = cacheWrite
  return out
}

/** Anthropic's stop_reason for an OpenAI finish_reason (the inverse of FINISH_REASONS). */
export function stopReason(finish: string | null | undefined): string {
  switch (finish) {
    case 'length':
      return 'max_tokens'
    case 'tool_calls':
    case 'function_call':
      return 'tool_use'
    case 'content_filter':
      return 'refusal'
    default:
      return 'end_turn'
  }
}

/** OpenAI usage as Anthropic's: input excludes what was read from or written to the cache. */
export function fromUsage(usage: OpenAI.Usage | null | undefined): Anthropic.Usage {
  const cached = usage?.prompt_tokens_details?.cached_tokens ?? 0
  const written = typeof usage?.cache_creation_input_tokens === 'number' ? usage.cache_creation_input_tokens : 0
  return {
    input_tokens: Math.max(0, (usage?.prompt_tokens ?? 0) - cached - written),
    output_tokens: usage?.completion_tokens ?? 0,
    cache_creation_input_tokens: written,
    cache_read_input_tokens: cached,
  }
}
