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
/** A Responses API answer's end: its status (JSON), or its last event's type (streams). */
const RESPONSE_END = /"(?:status|type)":"(?:response\.)?(completed|incomplete|failed|cancelled)"/

/** Notes the answer's id and finish reasons from a piece of its text (a JSON answer whole, or a stream's events as they go). */
export function noteAnswer(record: RequestRecord, text: string): void {
  if (record.responseId === undefined) {
    const id = ID.exec(text)
    if (id) record.responseId = id[1]
  }
  const found = record.api === 'responses' ? [...(RESPONSE_END.exec(text)?.slice(1) ?? [])] : Array.from(text.matchAll(FINISH), (m) => m[1]!)
  if (found.length === 0) return
  const reasons = (record.finishReasons ??= [])
  for (const reason of found) if (!reasons.includes(reason)) reasons.push(reason)
}
