import type { ChatCompletion, ChatCompletionChunk, ChunkDelta, ToolCall, Usage } from '../wire/pivot/types'

/**
 * A whole chat completion as the pivot's stream of chunks: per choice one chunk with its whole
 * message (role, reasoning, text, tool calls), one with its finish reason, then one with the usage.
 * The dialects' stream translators (wire/<dialect>/events-from-chunks, openai-chat/stream) turn
 * these into each API's events, so a cached answer streams exactly as a live one would.
 */
export function chunksOfCompletion(completion: ChatCompletion, usage: Usage | null): ChatCompletionChunk[] {
  const head = { id: completion.id, object: 'chat.completion.chunk' as const, created: completion.created, model: completion.model }
  const chunks: ChatCompletionChunk[] = []
  for (const choice of completion.choices) {
    const { role: _, content, tool_calls, ...rest } = choice.message
    const delta: ChunkDelta = { role: 'assistant', ...withoutNulls(rest) }
    if (typeof content === 'string') delta.content = content
    if (tool_calls?.length)
      delta.tool_calls = tool_calls.map((call: ToolCall, index) => ({ index, id: call.id, type: 'function', function: { ...call.function } }))
    chunks.push({ ...head, choices: [{ index: choice.index, delta, finish_reason: null }] })
    chunks.push({ ...head, choices: [{ index: choice.index, delta: {}, finish_reason: choice.finish_reason ?? 'stop' }] })
  }
  chunks.push({ ...head, choices: [], usage: usage ?? completion.usage ?? null })
  return chunks
}

const withoutNulls = (members: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(members).filter(([, value]) => value !== null && value !== undefined))

type Json = Record<string, any>

/**
 * A Responses API answer as the pivot completion it was made from: its message text and refusals,
 * its function calls, its reasoning summary. What a Responses caller streams from a cached answer.
 */
export function completionOfResponse(response: Json, usage: Usage | null): ChatCompletion {
  let content = ''
  let refusal: string | null = null
  let reasoning = ''
  const calls: ToolCall[] = []
  for (const item of (response.output as Json[] | undefined) ?? []) {
    if (item.type === 'message') {
      for (const part of (item.content as Json[] | undefined) ?? []) {
        if (part.type === 'output_text') content += String(part.text ?? '')
        else if (part.type === 'refusal') refusal = (refusal ?? '') + String(part.refusal ?? '')
      }
    } else if (item.type === 'function_call') {
      calls.push({ id: String(item.call_id), type: 'function', function: { name: String(item.name), arguments: String(item.arguments ?? '') } })
    } else if (item.type === 'reasoning') {
      for (const part of (item.summary as Json[] | undefined) ?? []) reasoning += String(part.text ?? '')
    }
  }
  const incomplete = response.status === 'incomplete'
  const finish =
    calls.length > 0 ? 'tool_calls' : incomplete ? (response.incomplete_details?.reason === 'content_filter' ? 'content_filter' : 'length') : 'stop'
  const message: ChatCompletion['choices'][number]['message'] = { role: 'assistant', content: calls.length > 0 && content === '' ? null : content, refusal }
  if (calls.length > 0) message.tool_calls = calls
  if (reasoning !== '') message.reasoning_content = reasoning
  return {
    id: String(response.id),
    object: 'chat.completion',
    created: Number(response.created_at ?? 0),
    model: String(response.model),
    choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
    usage: usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
  }
}
