/**
 * A pivot chat completion as a generateContent answer: what a target that does not speak Gemini
 * answered, for a Gemini-native caller. Reasoning the caller must hand back unchanged (Anthropic's
 * signed thinking, another model's reasoning text) travels sealed in a `thoughtSignature`, where
 * Gemini's own signatures go (https://ai.google.dev/gemini-api/docs/thought-signatures): on the
 * turn's first function call, else on its last part. The next turn's request-to-chat opens it.
 */
import type * as OpenAI from '../pivot/types'
import type { SealedReasoning } from '../pivot/sealed-reasoning'
import type * as Gemini from './types'

/** How a translated answer is named, and its reasoning shown and sealed. */
export interface AnswerOptions {
  /** The answer's `responseId`. */
  responseId: string
  /** Reasoning text as `thought: true` parts (the request's `thinkingConfig.includeThoughts`). */
  includeThoughts: boolean
  /** The kind of upstream that answered: recorded in what is sealed, so only that kind gets signed blocks back. */
  origin: string
  seal(reasoning: SealedReasoning): string
}

/** Finish reasons: a tool call ends the turn as STOP in Gemini; a content filter is SAFETY. */
export function finishReasonOf(reason: string | null | undefined): string {
  switch (reason) {
    case 'length':
      return 'MAX_TOKENS'
    case 'content_filter':
      return 'SAFETY'
    default:
      return 'STOP'
  }
}

/** Pivot usage as `usageMetadata`: thoughts apart from the answer's own tokens, the cached part of the prompt. */
export function usageMetadataOf(usage: OpenAI.Usage | null | undefined): Gemini.UsageMetadata {
  const prompt = usage?.prompt_tokens ?? 0
  const completion = usage?.completion_tokens ?? 0
  const thoughts = Math.min(usage?.completion_tokens_details?.reasoning_tokens ?? 0, completion)
  const cached = usage?.prompt_tokens_details?.cached_tokens ?? 0
  const out: Gemini.UsageMetadata = { promptTokenCount: prompt, candidatesTokenCount: completion - thoughts, totalTokenCount: prompt + completion }
  if (thoughts > 0) out.thoughtsTokenCount = thoughts
  if (cached > 0) out.cachedContentTokenCount = cached
  return out
}

/** A tool call's arguments as `args`: text that is not a JSON object is kept, not dropped, under `_raw_arguments`. */
export function argsOf(text: string): Record<string, unknown> {
  if (text.trim() === '') return {}
  try {
    const args = JSON.parse(text) as unknown
    if (typeof args === 'object' && args !== null && !Array.isArray(args)) return args as Record<string, unknown>
  } catch {}
  return { _raw_arguments: text }
}

/** A pivot tool call as a functionCall part, with its id: Gemini CLI and the SDK send it back on the functionResponse. */
export const functionCallPart = (call: { id: string; name: string; arguments: string }): Gemini.Part => ({
  functionCall: { id: call.id, name: call.name, args: argsOf(call.arguments) },
})

/** The reasoning a turn must carry back, or null when it has none. */
export function sealable(reasoning: { thinking_blocks?: OpenAI.ThinkingBlock[]; reasoning_content?: string | null }, origin: string): SealedReasoning | null {
  const blocks = reasoning.thinking_blocks ?? []
  const text = reasoning.reasoning_content ?? ''
  if (blocks.length === 0 && text === '') return null
  const out: SealedReasoning = { origin }
  if (blocks.length > 0) out.thinking_blocks = blocks
  if (text !== '') out.reasoning_content = text
  return out
}

/** The readable text of a turn's reasoning: its reasoning text, else its thinking blocks' text. */
export function reasoningText(reasoning: { thinking_blocks?: OpenAI.ThinkingBlock[]; reasoning_content?: string | null }): string {
  if (reasoning.reasoning_content) return reasoning.reasoning_content
  return (reasoning.thinking_blocks ?? []).map((b) => (b.type === 'thinking' ? b.thinking : '')).join('')
}

/** Puts a sealed signature where Gemini puts its own: the first function call, else the last part (a new empty text part if none). */
export function signParts(parts: Gemini.Part[], signature: string): void {
  const call = parts.find((p) => p.functionCall !== undefined)
  const last = parts.findLast((p) => p.thought !== true)
  if (call) call.thoughtSignature = signature
  else if (last) last.thoughtSignature = signature
  else parts.push({ text: '', thoughtSignature: signature })
}

/** A pivot chat.completion as a generateContent answer for the caller (`modelVersion` is the alias). */
export function toGenerateContentResponse(completion: OpenAI.ChatCompletion, alias: string, options: AnswerOptions): Gemini.GenerateContentResponse {
  const choice = completion.choices[0]
  const message = choice?.message
  const parts: Gemini.Part[] = []
  const thought = message ? reasoningText(message) : ''
  if (options.includeThoughts && thought !== '') parts.push({ text: thought, thought: true })
  const text = typeof message?.content === 'string' ? message.content : ''
  if (text !== '') parts.push({ text })
  if (typeof message?.refusal === 'string' && message.refusal !== '') parts.push({ text: message.refusal })
  for (const call of message?.tool_calls ?? []) parts.push(functionCallPart({ id: call.id, ...call.function }))
  const reasoning = message ? sealable(message, options.origin) : null
  if (reasoning) signParts(parts, options.seal(reasoning))
  return {
    candidates: [{ content: { role: 'model', parts }, finishReason: finishReasonOf(choice?.finish_reason), index: 0 }],
    usageMetadata: usageMetadataOf(completion.usage),
    modelVersion: alias,
    responseId: options.responseId,
  }
}
