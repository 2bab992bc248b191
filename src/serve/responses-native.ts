import type { ResponsesEvent } from '../providers/types'
import { applyEdits, replacement, uniqueMember, withNestedValue, withTopLevelValue } from '../wire/json-text'
import { stringMemberChars } from '../wire/pivot/generated'
import type { Usage } from '../wire/pivot/types'
import type { EventStream } from './exchange'

/** The events that carry the whole Response, whose `response.model` becomes the alias. */
const LIFECYCLE = new Set(['response.created', 'response.queued', 'response.in_progress', 'response.completed', 'response.failed', 'response.incomplete'])
/** The events after which nothing follows: held back until the request is counted. */
const TERMINAL = new Set(['response.completed', 'response.failed', 'response.incomplete', 'error'])

interface ResponsesUsage {
  input_tokens?: number
  output_tokens?: number
  input_tokens_details?: { cached_tokens?: number }
  output_tokens_details?: { reasoning_tokens?: number }
}

/** A Responses API usage as the pivot's (what the gateway counts). */
export function usageOfResponse(usage: ResponsesUsage | null | undefined): Usage | null {
  if (!usage) return null
  const prompt = usage.input_tokens ?? 0
  const completion = usage.output_tokens ?? 0
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: usage.input_tokens_details?.cached_tokens ?? 0 },
    completion_tokens_details: { reasoning_tokens: usage.output_tokens_details?.reasoning_tokens ?? 0 },
  }
}

/** A native Response's JSON with its top-level `model` set to the alias: the rest as the upstream sent it. */
export function withAliasModel(text: string, response: Record<string, unknown>, alias: string): string {
  const quoted = JSON.stringify(alias)
  const edited = typeof response.model === 'string' ? withTopLevelValue(text, 'model', JSON.stringify(response.model), quoted) : null
  return edited ?? JSON.stringify({ ...response, model: alias })
}

/**
 * A lifecycle event's data with `response.model` set to the alias, by a text edit; re-encoded only
 * when the edit cannot be made safely. The event's top level has no `model`, so when the text holds
 * exactly one `"model": <the parsed response.model>` it is that member (as withTopLevelValue trusts
 * an upstream's spelling): a few searches, instead of outlining the whole Response (all its output,
 * on the last event) twice.
 */
function relabel(data: string, quotedAlias: string): { data: string; response: Record<string, unknown> | null } {
  const parsed = JSON.parse(data) as { response?: Record<string, unknown> }
  const current = parsed.response?.model
  const member = typeof current === 'string' ? uniqueMember(data, 'model', JSON.stringify(current)) : null
  const edited = member ? applyEdits(data, [replacement(member, quotedAlias)]) : withNestedValue(data, 'response', 'model', quotedAlias)
  if (edited !== null) return { data: edited, response: parsed.response ?? null }
  return { data: JSON.stringify({ ...parsed, response: { ...parsed.response, model: JSON.parse(quotedAlias) as string } }), response: parsed.response ?? null }
}

/** A native stream being relayed, and the failure event that ends it when it breaks. */
export interface NativeResponseStream {
  stream: EventStream
  /** response.failed for a stream broken after its start: the last Response seen, failed, the next sequence number. */
  failure(error: { message: string; type: string }): string
}

/**
 * A native Responses stream relayed as sent: the lifecycle events' `response.model` becomes the
 * alias, usage is read from the terminal event's response, and that event is held back until the
 * request is counted (`finished` starts once the upstream ended; the stream's `kept` is what it
 * resolves to, awaited with the count before that event goes out). Delta events go through untouched.
 */
export async function relayResponseEvents(
  iterator: AsyncIterator<ResponsesEvent[]>,
  alias: string,
  finished: (response: Record<string, unknown> | null) => Promise<void>,
): Promise<NativeResponseStream> {
  let pending: IteratorResult<ResponsesEvent[]> | null = await iterator.next()
  const quotedAlias = JSON.stringify(alias)
  let usage: Usage | null = null
  let last: Record<string, unknown> | null = null
  let sequence = -1
  let terminal = ''
  let kept: Promise<void> | null = null
  let generated = 0
  const relay = ({ type, data }: ResponsesEvent): string => {
    if (type.endsWith('.delta')) generated += stringMemberChars(data, '"delta":"')
    const at = /"sequence_number":\s*(\d+)/.exec(data)
    if (at) sequence = Math.max(sequence, Number(at[1]))
    if (LIFECYCLE.has(type)) {
      const relabelled = relabel(data, quotedAlias)
      data = relabelled.data
      if (relabelled.response) {
        last = relabelled.response
        usage = usageOfResponse(last.usage as ResponsesUsage | undefined) ?? usage
      }
    }
    const text = `event: ${type}\ndata: ${data}\n\n`
    if (!TERMINAL.has(type)) return text
    terminal = text
    return ''
  }
  const stream: EventStream = {
    async next() {
      const result = pending ?? (await iterator.next())
      pending = null
      if (!result.done) return result.value.map(relay).join('')
      kept ??= finished(last)
      return null
    },
    usage: () => usage,
    generated: () => generated,
    end: () => terminal,
    kept: () => kept ?? Promise.resolve(),
    cancel: async () => void (await iterator.return?.()),
  }
  return {
    stream,
    failure(error) {
      const response = {
        ...last,
        model: alias,
        status: 'failed',
        error: { code: error.type === 'rate_limit_error' ? 'rate_limit_exceeded' : 'server_error', message: error.message },
      }
      return `event: response.failed\ndata: ${JSON.stringify({ type: 'response.failed', response, sequence_number: sequence + 1 })}\n\n`
    },
  }
}
