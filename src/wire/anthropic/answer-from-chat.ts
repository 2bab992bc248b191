/** An OpenAI chat completion as an Anthropic message: the answer of an OpenAI-shaped target to an Anthropic caller. */
import type * as OpenAI from '../pivot/types'
import type * as Anthropic from './types'
import { toolInputOf } from './common'
import { fromUsage, stopReason } from './usage'

/** How a translated answer is named and its reasoning signed. */
export interface AnswerOptions {
  /** The message's id (`msg_` and the request id); default: `msg_` and the upstream's id. */
  id?: string
  /** Signs reasoning made into a thinking block, so it can come back (see signature.ts); default: unsigned. */
  sign?(thinking: string): string
}

/** An OpenAI chat.completion as an Anthropic message for the caller (`model` is the alias): the inverse of toChatCompletion. */
export function toMessageResponse(completion: OpenAI.ChatCompletion, model: string, options: AnswerOptions = {}): Anthropic.MessageResponse {
  const choice = completion.choices[0]
  const answer = choice?.message
  const content: Anthropic.ContentBlock[] = []
  if (answer?.thinking_blocks && answer.thinking_blocks.length > 0) {
    for (const block of answer.thinking_blocks) content.push(block.type === 'thinking' ? { ...block } : { type: 'redacted_thinking', data: block.data })
  } else if (typeof answer?.reasoning_content === 'string' && answer.reasoning_content !== '') {
    const thinking = answer.reasoning_content
    content.push({ type: 'thinking', thinking, signature: options.sign?.(thinking) ?? '' })
  }
  const text = typeof answer?.content === 'string' ? answer.content : ''
  if (text !== '') content.push({ type: 'text', text })
  if (typeof answer?.refusal === 'string' && answer.refusal !== '') content.push({ type: 'text', text: answer.refusal })
  for (const call of answer?.tool_calls ?? [])
    content.push({ type: 'tool_use', id: call.id, name: call.function.name, input: toolInputOf(call.function.arguments) })
  return {
    id: options.id ?? `msg_${completion.id}`,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: stopReason(choice?.finish_reason),
    stop_sequence: null,
    usage: fromUsage(completion.usage),
  }
}
