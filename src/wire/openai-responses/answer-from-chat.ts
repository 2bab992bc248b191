/** A pivot chat completion as a Response: a translated target's answer to a Responses caller. */
import type * as OpenAI from '../pivot/types'
import { type AnswerOptions, callItem, incompleteReason, itemIds, namesFor, responseShell, responseUsage, sealable, summaryWanted } from './common'
import type { OutputItem, OutputMessage, OutputReasoning, Response, ResponsesRequest } from './types'

export type { AnswerOptions } from './common'

/** A translated answer: what the caller gets, and the output items the conversation store keeps. */
export interface ResponseAnswer {
  response: Response
  /** The output items with their reasoning always sealed (whatever `include` said): the next turn's history. */
  history: OutputItem[]
}

/** The reasoning item: the reasoning text as its summary when summaries were asked for, the turn's reasoning sealed. */
function reasoningItem(answer: OpenAI.AssistantMessage, request: ResponsesRequest, options: AnswerOptions, id: string): OutputReasoning | null {
  const sealed = sealable(answer, options.origin)
  if (!sealed) return null
  const text = answer.reasoning_content || (answer.thinking_blocks ?? []).map((b) => (b.type === 'thinking' ? b.thinking : '')).join('')
  const summary = summaryWanted(request) && text !== '' ? [{ type: 'summary_text' as const, text }] : []
  return { type: 'reasoning', id, summary, encrypted_content: options.seal(sealed) }
}

function messageItem(answer: OpenAI.AssistantMessage, id: string, status: OutputMessage['status']): OutputMessage | null {
  const content: OutputMessage['content'] = []
  const text = typeof answer.content === 'string' ? answer.content : ''
  const refusal = typeof answer.refusal === 'string' ? answer.refusal : ''
  if (text !== '' || (refusal === '' && !answer.tool_calls?.length)) content.push({ type: 'output_text', text, annotations: [], logprobs: [] })
  if (refusal !== '') content.push({ type: 'refusal', refusal })
  return content.length === 0 ? null : { type: 'message', id, status, role: 'assistant', content }
}

/** The caller's view of the items: encrypted_content only when `include` asked for it. */
export const visibleItems = (items: OutputItem[], includeEncrypted: boolean): OutputItem[] =>
  includeEncrypted ? items : items.map((item) => (item.type === 'reasoning' ? { type: item.type, id: item.id, summary: item.summary } : item))

/**
 * A chat completion as a Response (`model` the caller's alias): a reasoning item (rs_…), the message
 * (msg_…, output_text with empty annotations and logprobs, a refusal part), then a function_call
 * (fc_…) or custom_tool_call (ctc_…) per tool call, names and namespaces restored, call ids kept.
 * finish_reason `length` or `content_filter` makes it `incomplete`, with that reason.
 */
export function toResponse(completion: OpenAI.ChatCompletion, request: ResponsesRequest, options: AnswerOptions): ResponseAnswer {
  const choice = completion.choices[0]
  const answer: OpenAI.AssistantMessage = choice?.message ?? { role: 'assistant', content: '', refusal: null }
  const reason = incompleteReason(choice?.finish_reason)
  const ids = itemIds(options.id)
  const names = namesFor(request, options)
  const history: OutputItem[] = []
  const reasoning = reasoningItem(answer, request, options, ids.reasoning(0))
  if (reasoning) history.push(reasoning)
  const message = messageItem(answer, ids.message(0), reason ? 'incomplete' : 'completed')
  if (message) history.push(message)
  for (const [n, call] of (answer.tool_calls ?? []).entries()) history.push(callItem({ id: call.id || ids.callId(n), ...call.function }, names, ids, n))
  const response = responseShell(request, options, reason ? 'incomplete' : 'completed')
  if (reason) response.incomplete_details = { reason }
  response.output = visibleItems(history, options.includeEncrypted)
  response.usage = responseUsage(completion.usage)
  return { response, history }
}
