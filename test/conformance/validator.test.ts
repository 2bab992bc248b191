/**
 * The validator itself, proven: it accepts the document's own examples of the schemas the suite
 * checks answers against, and refuses answers broken on purpose (a required member left out, a
 * member of the wrong type, a value outside an enum, an event of a type the document has not).
 *
 * Several of the document's examples are older than their schemas: they leave out members the
 * schemas made required later (`logprobs` on output text, `sequence_number` on events,
 * `parallel_tool_calls` on a response, `status` on an output message) or write `null` where the
 * schema says a string or an object (`user`, `usage`). Those are accepted once exactly that drift is
 * made good, and refused before: the validator sees the drift and nothing else. Three are stale in
 * other ways too and are listed with the reason the validator gives.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { TEST_MS } from '../support/hooks'
import { OPENAPI_FILE, openapiErrors, streamEventErrors, streamEventSchemas, withNullable } from '../support/openapi'

setDefaultTimeout(TEST_MS)

type Json = Record<string, any>

const document = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as { components: { schemas: Record<string, Json> } }
const schemas = document.components.schemas

/** The schemas the suite validates answers against, and every member of ResponseStreamEvent. */
const CHECKED = [
  'ErrorResponse',
  'CreateChatCompletionResponse',
  'CreateChatCompletionStreamResponse',
  'CreateEmbeddingResponse',
  'ListModelsResponse',
  'Model',
  'Response',
  'ResponseItemList',
  'TokenCountsResource',
  ...streamEventSchemas().values(),
]

/** A schema's examples: its `example`, or `x-oaiMeta.example` (JSON text, or one JSON value a line as for stream chunks). */
function examplesOf(name: string): unknown[] | 'unparseable' {
  const example = schemas[name]!.example ?? schemas[name]!['x-oaiMeta']?.example
  if (example === undefined) return []
  if (typeof example !== 'string') return [example]
  try {
    return [JSON.parse(example)]
  } catch {
    const lines = example.split('\n').filter((line) => line.startsWith('{') && line.endsWith('}'))
    return lines.length === 0 ? 'unparseable' : lines.map((line) => JSON.parse(line) as unknown)
  }
}

/** An example with the drift described above made good, and nothing else changed. */
function driftMadeGood(value: unknown, top = true): unknown {
  if (Array.isArray(value)) return value.map((item) => driftMadeGood(item, false))
  if (typeof value !== 'object' || value === null) return value
  const out: Json = {}
  for (const [key, member] of Object.entries(value)) if (!((key === 'user' || key === 'usage') && member === null)) out[key] = driftMadeGood(member, false)
  const textEvent = out.type === 'response.output_text.delta' || out.type === 'response.output_text.done'
  if ((out.type === 'output_text' || textEvent) && !('logprobs' in out)) out.logprobs = []
  if (out.object === 'response' && !('parallel_tool_calls' in out)) out.parallel_tool_calls = true
  if (out.type === 'message' && out.role === 'assistant' && !('status' in out)) out.status = 'completed'
  if (top && String(out.type).startsWith('response.') && !('sequence_number' in out)) out.sequence_number = 0
  return out
}

/** Examples stale beyond that drift: the first reason the validator gives for each. */
const STALE: Record<string, string> = {
  ResponseCompletedEvent: "data/response/usage must have required property 'input_tokens_details'",
  ResponseIncompleteEvent: 'data/response/incomplete_details/reason must be equal to one of the allowed values',
  ResponseQueuedEvent: "data/response must have required property 'object'",
}
/** Not JSON at all (a comma missing). */
const UNPARSEABLE = ['ResponseFunctionCallArgumentsDeltaEvent']

describe("the document's own examples", () => {
  const withExamples = CHECKED.filter((name) => examplesOf(name) !== 'unparseable' && (examplesOf(name) as unknown[]).length > 0)

  test('the schemas checked have examples to try', () => {
    expect(withExamples.length).toBeGreaterThan(50)
    expect(CHECKED.filter((name) => examplesOf(name) === 'unparseable')).toEqual(UNPARSEABLE)
  })

  for (const name of withExamples)
    test(`${name}: its example is accepted${name in STALE ? ' (but for what is stale in it)' : ''}`, () => {
      for (const example of examplesOf(name) as unknown[]) {
        const asIs = openapiErrors(name, example)
        const madeGood = asIs === null ? null : openapiErrors(name, driftMadeGood(example))
        if (name in STALE) expect(madeGood?.split('\n')).toContain(STALE[name])
        else expect({ name, madeGood }).toEqual({ name, madeGood: null })
      }
    })
})

const completion = () => JSON.parse(schemas.CreateChatCompletionResponse!['x-oaiMeta'].example) as Json
const textDelta = () => ({
  type: 'response.output_text.delta',
  item_id: 'msg_1',
  output_index: 0,
  content_index: 0,
  delta: 'Hi',
  logprobs: [],
  sequence_number: 3,
})

describe('answers broken on purpose are refused', () => {
  test('a chat completion: accepted whole; refused without `id`, with `created` a string, with another `object`', () => {
    expect(openapiErrors('CreateChatCompletionResponse', completion())).toBeNull()
    const { id: _, ...noId } = completion()
    expect(openapiErrors('CreateChatCompletionResponse', noId)).toContain("must have required property 'id'")
    expect(openapiErrors('CreateChatCompletionResponse', { ...completion(), created: 'yesterday' })).toContain('data/created must be integer')
    expect(openapiErrors('CreateChatCompletionResponse', { ...completion(), object: 'chat.completion.chunk' })).toContain(
      'data/object must be equal to one of the allowed values',
    )
  })

  test('an error body: param and code may be null but must be there, and be strings when not null', () => {
    const error = { message: 'Unauthorized', type: 'authentication_error', param: null, code: null }
    expect(openapiErrors('ErrorResponse', { error })).toBeNull()
    const { param: _, ...noParam } = error
    const { code: __, ...noCode } = error
    expect(openapiErrors('ErrorResponse', { error: noParam })).toContain("data/error must have required property 'param'")
    expect(openapiErrors('ErrorResponse', { error: noCode })).toContain("data/error must have required property 'code'")
    expect(openapiErrors('ErrorResponse', { error: { ...error, code: 401 } })).toContain('data/error/code must be string')
    expect(openapiErrors('ErrorResponse', { message: 'flat' })).toContain("must have required property 'error'")
  })

  test('a stream chunk: refused without `choices`, or with a choice whose delta is not an object', () => {
    const chunk = { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: 'x' }, finish_reason: null }] }
    expect(openapiErrors('CreateChatCompletionStreamResponse', chunk)).toBeNull()
    const { choices: _, ...noChoices } = chunk
    expect(openapiErrors('CreateChatCompletionStreamResponse', noChoices)).toContain("must have required property 'choices'")
    expect(openapiErrors('CreateChatCompletionStreamResponse', { ...chunk, choices: [{ index: 0, delta: 'x', finish_reason: null }] })).toContain(
      'data/choices/0/delta must be object',
    )
  })

  test('a Responses event: checked against the schema its type names; refused without `logprobs`, or of an unknown type', () => {
    expect(streamEventErrors(textDelta())).toBeNull()
    const { logprobs: _, ...noLogprobs } = textDelta()
    expect(streamEventErrors(noLogprobs)).toContain("must have required property 'logprobs'")
    expect(streamEventErrors({ ...textDelta(), sequence_number: 'three' } as { type: string })).toContain('data/sequence_number must be integer')
    expect(streamEventErrors({ ...textDelta(), type: 'response.output_text.said' })).toBe('no schema for the stream event type "response.output_text.said"')
  })

  test('embeddings: refused when a vector is not numbers', () => {
    const body = { object: 'list', model: 'm', data: [{ object: 'embedding', index: 0, embedding: [0.5] }], usage: { prompt_tokens: 1, total_tokens: 1 } }
    expect(openapiErrors('CreateEmbeddingResponse', body)).toBeNull()
    expect(openapiErrors('CreateEmbeddingResponse', { ...body, data: [{ ...body.data[0], embedding: ['0.5'] }] })).toContain('must be number')
  })

  test('OpenAPI\'s `nullable: true` is read as "or null", and nothing else changes', () => {
    expect(withNullable({ type: 'string', nullable: true, description: 'd' })).toEqual({ anyOf: [{ type: 'string', description: 'd' }, { type: 'null' }] })
    expect(withNullable({ properties: { a: { type: 'integer', nullable: false } } })).toEqual({ properties: { a: { type: 'integer' } } })
  })

  test('an unknown schema name is an error of the test, not a pass', () => {
    expect(() => openapiErrors('NoSuchSchema', {})).toThrow('no schema "NoSuchSchema" in the OpenAPI document')
  })
})
