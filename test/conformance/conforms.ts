/**
 * The one assertion of the conformance suite: a value validates against a schema of OpenAI's
 * published OpenAPI document (test/support/openapi.ts), with the validator's errors in the failure
 * message. Each file counts what it validated and says so once at the end, so the suite's reach is
 * visible in its output.
 */
import { expect } from 'bun:test'
import { openapiErrors, streamEventErrors } from '../support/openapi'
import { sseEvents } from '../responses/helpers'

let validated = 0

/** The validator's errors (lines), less those a caller accounts for elsewhere; null when none is left. */
export type ErrorFilter = (errors: string | null) => string | null

const none: ErrorFilter = (errors) => errors

/** `value` validates against the document's schema `schema`; `what` names the answer in a failure. */
export function expectConforms(schema: string, value: unknown, what: string, filter = none): void {
  validated++
  expect({ what, schema, errors: filter(openapiErrors(schema, value)) }).toEqual({ what, schema, errors: null })
}

/** A Responses stream event validates against the schema its `type` names. */
export function expectEventConforms(event: { type: string }, what: string, filter = none): void {
  validated++
  expect({ what, type: event.type, errors: filter(streamEventErrors(event)) }).toEqual({ what, type: event.type, errors: null })
}

/** A count of the answers validated from now on (one test file's, though Bun may run several in one process). */
export function startCounting(): () => number {
  const start = validated
  return () => validated - start
}

/** A chat completions SSE body as its chunks, `[DONE]` left out. */
export const chatChunks = (text: string): any[] =>
  sseEvents(text)
    .filter((e) => e.text !== '[DONE]')
    .map((e) => e.data)

/** A JSON answer whose status must be 200: its parse, or a failure naming the status and body. */
export async function ok200(response: Response, what: string): Promise<any> {
  const text = await response.text()
  expect({ what, status: response.status, text: response.status === 200 ? '' : text }).toEqual({ what, status: 200, text: '' })
  return JSON.parse(text)
}
