/** A generateContent answer as a pivot chat completion: a Gemini or Vertex AI target's answer. */
import type * as OpenAI from '../pivot/types'
import { type SignatureAnchor, signatureBlock } from './signature'
import type * as Gemini from './types'
import { answerIdOf, callId, finishReason, toUsage } from './usage'

/** What the parts of one answer make: text, thought summaries, function calls and their signatures. */
export interface AnswerParts {
  text: string
  reasoning: string
  toolCalls: OpenAI.ToolCall[]
  signatures: { anchor: SignatureAnchor; signature: string }[]
}

/**
 * Reads parts in order. A signature on a function call goes back on that call; any other (on the
 * text, or on an empty text part that only carries it) goes back on the text.
 */
export function readParts(parts: readonly Gemini.Part[], answerId: string, into: AnswerParts): void {
  for (const part of parts) {
    if (part.functionCall) {
      const position = into.toolCalls.length
      into.toolCalls.push({
        id: callId(answerId, position, part.functionCall),
        type: 'function',
        function: { name: part.functionCall.name, arguments: JSON.stringify(part.functionCall.args ?? {}) },
      })
      if (part.thoughtSignature) into.signatures.push({ anchor: { call: position }, signature: part.thoughtSignature })
      continue
    }
    if (typeof part.text === 'string') {
      if (part.thought) into.reasoning += part.text
      else into.text += part.text
    }
    if (part.thoughtSignature) into.signatures.push({ anchor: 'text', signature: part.thoughtSignature })
  }
}

/**
 * The signatures as pivot thinking blocks; the first carries the thought summaries, so that a
 * dialect that shows blocks rather than `reasoning_content` (Anthropic's) loses none of them.
 */
export function thinkingBlocks(read: AnswerParts): OpenAI.ThinkingBlock[] {
  return read.signatures.map(({ anchor, signature }, i) => signatureBlock(signature, anchor, i === 0 ? read.reasoning : ''))
}

/**
 * A generateContent answer as a pivot chat.completion (`model` is what the caller sees). A prompt
 * blocked by safety (`promptFeedback.blockReason`, no candidate) is an empty answer whose finish
 * reason is `content_filter`, as is a candidate stopped by a filter: each inbound dialect has its own
 * word for it, never an error.
 */
export function toChatCompletion(response: Gemini.GenerateContentResponse, model: string, created: number): OpenAI.ChatCompletion {
  const id = answerIdOf(response)
  const candidate = response.candidates?.[0]
  const read: AnswerParts = { text: '', reasoning: '', toolCalls: [], signatures: [] }
  readParts(candidate?.content?.parts ?? [], id, read)
  const blocked = !candidate && response.promptFeedback?.blockReason !== undefined
  const message: OpenAI.AssistantMessage = {
    role: 'assistant',
    content: read.text === '' && read.toolCalls.length > 0 ? null : read.text,
    refusal: null,
  }
  if (read.toolCalls.length > 0) message.tool_calls = read.toolCalls
  if (read.reasoning !== '') message.reasoning_content = read.reasoning
  if (read.signatures.length > 0) message.thinking_blocks = thinkingBlocks(read)
  return {
    id: `chatcmpl-${id}`,
    object: 'chat.completion',
    created,
    model,
    choices: [
      {
        index: 0,
        message,
        logprobs: null,
        finish_reason: blocked ? 'content_filter' : finishReason(candidate?.finishReason, read.toolCalls.length > 0),
      },
    ],
    usage: toUsage(response.usageMetadata),
  }
}
