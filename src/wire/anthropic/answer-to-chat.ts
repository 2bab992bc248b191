/** An Anthropic message as an OpenAI chat completion: the answer of an Anthropic target to a chat caller. */
import type * as OpenAI from '../pivot/types'
import type * as Anthropic from './types'
import { JSON_TOOL, type RequestShape } from './common'
import { finishReason, toUsage } from './usage'

const jsonAnswer = (input: Record<string, unknown>, shape: RequestShape) => JSON.stringify(shape.json?.wrapped ? input.value : input)

/** An Anthropic message as an OpenAI chat.completion for the caller (`model` is the alias). */
export function toChatCompletion(message: Anthropic.MessageResponse, shape: RequestShape, model: string, created: number): OpenAI.ChatCompletion {
  let text = ''
  let json: string | null = null
  let reasoning = ''
  const toolCalls: OpenAI.ToolCall[] = []
  const thinking: OpenAI.ThinkingBlock[] = []
  for (const block of message.content) {
    if (block.type === 'text') text += block.text
    else if (block.type === 'thinking') {
      reasoning += block.thinking
      thinking.push({ type: 'thinking', thinking: block.thinking, signature: block.signature })
    } else if (block.type === 'redacted_thinking') thinking.push({ type: 'redacted_thinking', data: block.data })
    else if (block.type === 'tool_use') {
      if (shape.json && block.name === JSON_TOOL) json = jsonAnswer(block.input, shape)
      else toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input) } })
    }
  }
  const assistant: OpenAI.AssistantMessage = {
    role: 'assistant',
    // In JSON mode the answer is the tool's input; text around it would make it unparseable.
    content: json ?? (text === '' && toolCalls.length > 0 ? null : text),
    refusal: null,
  }
  if (toolCalls.length > 0) assistant.tool_calls = toolCalls
  if (thinking.length > 0) {
    assistant.reasoning_content = reasoning
    assistant.thinking_blocks = thinking
  }
  return {
    id: message.id,
    object: 'chat.completion',
    created,
    model,
    // A finished message always has a stop reason; should one be missing, the content says what it was.
    choices: [
      {
        index: 0,
        message: assistant,
        logprobs: null,
        finish_reason: finishReason(message.stop_reason ?? (toolCalls.length > 0 ? 'tool_use' : 'end_turn'), toolCalls.length > 0),
      },
    ],
    usage: toUsage(message.usage ?? {}),
  }
}
