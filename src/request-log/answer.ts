/**
 * What a request's record learns from its answer as it goes out: the answer's id and finish reasons
 * (for every request, read off the caller's JSON or SSE text by a scan, no parse), and, when bodies
 * are kept, a stream's answer put together from its events (stream-answer.ts).
 */
import type { RequestRecord } from '../observe/request-record'

/** The first id in an answer: the answer's own (`chatcmpl-`, `msg_`, `resp_`; Gemini's `responseId`). JSON strings escape their quotes, so text inside one never matches. */
const ID = /"(?:id|responseId)":"([^"\\]{1,200})"/
/** Why generation stopped, in each dialect's words. */
const FINISH = /"(?:finish_reason|stop_reason|finishReason)":"([A-Za-z_]{1,64})"/g
/** A Responses API JSON answer's end: its status, the Response's first (ahead of its output items and theirs). */
const RESPONSE_STATUS = /"status":"(completed|incomplete|failed|cancelled)"/
/** How a Responses stream ends: its terminal event, which names the end in its type. */
const TERMINAL_EVENTS = new Set(['completed', 'incomplete', 'failed', 'cancelled'])
const EVENT_PREFIX = 'event: response.'

/**
 * A Responses answer's end, from a piece of its text: a JSON answer's status, or a stream's terminal
 * event. Events are written one `event:` line first, and the terminal one comes last, so only the
 * piece's last event is looked at: the events before it are never scanned.
 */
function responseEnd(text: string): string | undefined {
  if (!text.startsWith('event: ')) return RESPONSE_STATUS.exec(text)?.[1]
  const at = text.lastIndexOf(EVENT_PREFIX)
  if (at === -1) return undefined
  const name = text.slice(at + EVENT_PREFIX.length, text.indexOf('\n', at))
  return TERMINAL_EVENTS.has(name) ? name : undefined
}

/** What noteAnswer reads and writes of a request's record. */
export type AnswerNotes = Pick<RequestRecord, 'api' | 'responseId' | 'finishReasons'>

/** Notes the answer's id and finish reasons from a piece of its text (a JSON answer whole, or a stream's events as they go). */
export function noteAnswer(record: AnswerNotes, text: string): void {
  if (record.responseId === undefined) {
    const id = ID.exec(text)
    if (id) record.responseId = id[1]
  }
  if (record.api === 'responses') {
    const end = responseEnd(text)
    if (end !== undefined) addReason(record, end)
    return
  }
  // Most pieces of a stream name no reason: one plain search (every spelling ends `eason":"`) skips the regex for them.
  if (!text.includes('eason":"')) return
  for (const match of text.matchAll(FINISH)) addReason(record, match[1]!)
}

function addReason(record: AnswerNotes, reason: string): void {
  const reasons = (record.finishReasons ??= [])
  if (!reasons.includes(reason)) reasons.push(reason)
}
