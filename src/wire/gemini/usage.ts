/** Usage, finish reasons and tool-call ids, from Google's answers to the pivot's. */
import type * as OpenAI from '../pivot/types'
import type * as Gemini from './types'

/** Finish reasons that mean a safety or policy filter stopped the answer: the pivot's `content_filter`. */
const FILTERED = new Set([
  'SAFETY',
  'RECITATION',
  'BLOCKLIST',
  'PROHIBITED_CONTENT',
  'SPII',
  'IMAGE_SAFETY',
  'IMAGE_PROHIBITED_CONTENT',
  'IMAGE_RECITATION',
  'LANGUAGE',
])

/**
 * The pivot's finish_reason for a candidate's finishReason (https://ai.google.dev/api/generate-content#FinishReason):
 * MAX_TOKENS is `length`, the filters `content_filter`, a stop with function calls `tool_calls`,
 * anything else `stop`.
 */
export function finishReason(reason: string | undefined, calledTools: boolean): string {
  if (reason === 'MAX_TOKENS') return 'length'
  if (reason !== undefined && FILTERED.has(reason)) return 'content_filter'
  return calledTools ? 'tool_calls' : 'stop'
}

/**
 * `usageMetadata` as the pivot's usage, exactly: the prompt (cached content and tool-use prompts
 * included) as prompt tokens, the cached part also as `cached_tokens`; the answer and the thoughts
 * (which `candidatesTokenCount` leaves out) as completion tokens, the thoughts also as
 * `reasoning_tokens`. The total is Google's `totalTokenCount`.
 */
export function toUsage(usage: Gemini.UsageMetadata | undefined): OpenAI.Usage {
  const prompt = (usage?.promptTokenCount ?? 0) + (usage?.toolUsePromptTokenCount ?? 0)
  const thoughts = usage?.thoughtsTokenCount ?? 0
  const completion = (usage?.candidatesTokenCount ?? 0) + thoughts
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: usage?.cachedContentTokenCount ?? 0 },
    completion_tokens_details: { reasoning_tokens: thoughts },
  }
}

/**
 * A function call's id in the pivot: Google's own when it gave one, else made from the answer's id
 * and the call's position, so the same answer names its calls alike in JSON and in a stream.
 */
export const callId = (answerId: string, position: number, call: Gemini.FunctionCall): string =>
  typeof call.id === 'string' && call.id !== '' ? call.id : `call_${answerId}_${position}`

/** The answer's id for the pivot's ids: Google's `responseId`, or one made up when it gave none. */
export const answerIdOf = (response: Gemini.GenerateContentResponse): string =>
  typeof response.responseId === 'string' && response.responseId !== '' ? response.responseId : crypto.randomUUID().replaceAll('-', '')
