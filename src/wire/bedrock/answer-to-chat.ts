/** A Converse answer as an OpenAI chat completion: a Bedrock target's answer, in the pivot. */
import type * as OpenAI from '../pivot/types'
import type * as Bedrock from './types'
import { finishReason, toUsage } from './common'

/**
 * Reasoning as the pivot carries it: its text as `reasoning_content`; signed or redacted reasoning
 * (Claude's) also as `thinking_blocks`, which the caller hands back on its next turn unchanged.
 */
export function reasoningOf(block: Bedrock.ReasoningContentBlock): { text: string; thinking: OpenAI.ThinkingBlock | null } {
  if (typeof block.redactedContent === 'string') return { text: '', thinking: { type: 'redacted_thinking', data: block.redactedContent } }
  const text = block.reasoningText?.text ?? ''
  const signature = block.reasoningText?.signature
  return { text, thinking: signature ? { type: 'thinking', thinking: text, signature } : null }
}

/** A Converse answer as an OpenAI chat.completion for the caller (`model` is the alias; `id` the gateway's). */
export function toChatCompletion(answer: Bedrock.ConverseResponse, id: string, model: string, created: number): OpenAI.ChatCompletion {
  let text = ''
  let reasoning = ''
  const toolCalls: OpenAI.ToolCall[] = []
  const thinking: OpenAI.ThinkingBlock[] = []
  for (const block of answer.output?.message?.content ?? []) {
    if (typeof block.text === 'string') text += block.text
    else if (block.reasoningContent) {
      const { text: part, thinking: signed } = reasoningOf(block.reasoningContent)
      reasoning += part
      if (signed) thinking.push(signed)
    } else if (block.toolUse) {
      const { toolUseId, name, input } = block.toolUse
      toolCalls.push({ id: toolUseId, type: 'function', function: { name, arguments: JSON.stringify(input ?? {}) } })
    }
  }
  const message: OpenAI.AssistantMessage = { role: 'assistant', content: text === '' && toolCalls.length > 0 ? null : text, refusal: null }
  if (toolCalls.length > 0) message.tool_calls = toolCalls
  if (reasoning !== '') message.reasoning_content = reasoning
  if (thinking.length > 0) message.thinking_blocks = thinking
  return {
    id,
    object: 'chat.completion',
    created,
    model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(answer.stopReason) }],
    usage: toUsage(answer.usage),
  }
}
