/**
 * The Responses API, validated against OpenAI's published OpenAPI document: each created Response
 * (JSON) against Response, each stream event against the member of ResponseStreamEvent its `type`
 * names, for text, function calls, parallel function calls, structured output and reasoning,
 * translated through every upstream kind and native; a retrieved Response, its input items
 * (ResponseItemList) and input token counts (TokenCountsResource); a stream the upstream breaks.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { sseEvents } from '../responses/helpers'
import { type ErrorFilter, expectConforms, expectEventConforms, ok200, startCounting } from './conforms'
import { type EveryKind, everyKind } from './upstreams'

setDefaultTimeout(TEST_MS)

let validatedCount = () => 0

let kinds: EveryKind

setup(async () => {
  validatedCount = startCounting()
  kinds = await everyKind()
})
teardown(async () => {
  console.log(`conformance/responses: ${validatedCount()} answers validated against the OpenAPI document`)
  await kinds?.stop()
})

const request = (method: string, path: string, body?: unknown) =>
  fetch(`${kinds.gateway.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${kinds.key}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  })

const tool = (name: string) => ({
  type: 'function',
  name,
  description: `${name} for a city`,
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  strict: true,
})

const CITY = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false }

/** What each scenario asks, and the output item type its answer must hold. */
const SCENARIOS: Record<string, { body: Record<string, unknown>; holds: string }> = {
  text: { body: { input: 'hello conformance', instructions: 'be brief' }, holds: 'message' },
  'function calls': { body: { input: 'weather in Paris?', tools: [tool('get_weather')], tool_choice: 'required' }, holds: 'function_call' },
  'parallel function calls': {
    body: { input: '[[parallel]] weather and time in Paris?', tools: [tool('get_weather'), tool('get_time')], tool_choice: 'required' },
    holds: 'function_call',
  },
  'structured output': {
    body: { input: 'a city, as JSON', text: { format: { type: 'json_schema', name: 'city', schema: CITY, strict: true } } },
    holds: 'message',
  },
  reasoning: { body: { input: 'think, then answer', reasoning: { effort: 'low', summary: 'auto' } }, holds: 'message' },
}

const ALIASES = ['k/mock', 'k/openai', 'k/native', 'k/anthropic', 'k/gemini', 'k/vertex', 'k/vertex-claude', 'k/bedrock', 'k/azure']

/** The mock calls a tool only when told which (tool_choice), and echoes instead of answering JSON. */
const checksOutput = (model: string, scenario: string) => !(model === 'k/mock' && scenario === 'structured output')

/**
 * What a native target's own answers say that the document does not allow: OpenAI writes `"user":
 * null` and, in `response.created` and `.in_progress`, `"usage": null` (as the document's own
 * examples show), and the fake, written from OpenAI's reference, leaves out `cache_write_tokens`.
 * A native answer is relayed as sent (only `model` replaced), so these pass through unchanged; any
 * other error is the gateway's, and fails.
 */
const UPSTREAM_DEVIATIONS = [
  /^data(\/response)?\/user must be string$/,
  /^data\/response\/usage must be object$/,
  /^data(\/response)?\/usage\/input_tokens_details must have required property 'cache_write_tokens'$/,
]

/** The validator's errors, less the native target's own deviations when `model` is the native one. */
const gatewayErrors =
  (model: string): ErrorFilter =>
  (errors) => {
    if (errors === null || model !== 'k/native') return errors
    const left = errors.split('\n').filter((line) => !UPSTREAM_DEVIATIONS.some((deviation) => deviation.test(line)))
    return left.length === 0 ? null : left.join('\n')
  }

/** The stream event types validated, translated and native: the suite's reach, checked at the end. */
const seen = { translated: new Set<string>(), native: new Set<string>() }
const noteType = (model: string, type: string) => seen[model === 'k/native' ? 'native' : 'translated'].add(type)

/** The ids of the responses created in JSON, for retrieval and their input items. */
const created: { model: string; id: string }[] = []

describe('create: the Response and every stream event, translated and native', () => {
  for (const model of ALIASES)
    for (const [name, scenario] of Object.entries(SCENARIOS)) {
      test(`${model}, ${name}: the JSON answer is a Response`, async () => {
        const what = `${model} ${name} JSON`
        const response = await ok200(await request('POST', '/v1/responses', { model, ...scenario.body }), what)
        expectConforms('Response', response, what, gatewayErrors(model))
        if (checksOutput(model, name))
          expect({ what, types: response.output.map((i: any) => i.type) }).toEqual({ what, types: expect.arrayContaining([scenario.holds]) })
        created.push({ model, id: response.id })
      })

      test(`${model}, ${name}: every stream event validates against the schema of its type`, async () => {
        const what = `${model} ${name} stream`
        const response = await request('POST', '/v1/responses', { model, ...scenario.body, stream: true })
        expect({ what, status: response.status }).toEqual({ what, status: 200 })
        const events = sseEvents(await response.text())
        expect(events.at(-1)?.data?.type).toBe('response.completed')
        events.forEach((event, i) => {
          expect({ what, i, named: event.event }).toEqual({ what, i, named: event.data.type })
          expectEventConforms(event.data, `${what} event ${i} (${event.data.type})`, gatewayErrors(model))
          noteType(model, event.data.type)
        })
        const completed = events.at(-1)!.data.response
        if (checksOutput(model, name))
          expect({ what, types: completed.output.map((i: any) => i.type) }).toEqual({ what, types: expect.arrayContaining([scenario.holds]) })
      })
    }
})

describe('stored responses: retrieved, their input items, input token counts', () => {
  test('GET /v1/responses/{id} is a Response, for every target', async () => {
    expect(created.length).toBeGreaterThan(0)
    for (const { model, id } of created)
      expectConforms('Response', await ok200(await request('GET', `/v1/responses/${id}`), `${model} GET ${id}`), `${model} GET ${id}`, gatewayErrors(model))
  })

  // A native target's input items are its own, relayed as it lists them; the fake lists them as
  // they were sent (no ids, string contents), unlike OpenAI, so only the gateway's lists are checked.
  test('GET /v1/responses/{id}/input_items is a ResponseItemList, for every translated target', async () => {
    for (const { model, id } of created.filter((response) => response.model !== 'k/native')) {
      const what = `${model} input_items ${id}`
      const list = await ok200(await request('GET', `/v1/responses/${id}/input_items`), what)
      expectConforms('ResponseItemList', list, what)
      expect(list.data.length).toBeGreaterThan(0)
    }
  })

  test('input items of a conversation carried on by previous_response_id: function call and output, a ResponseItemList', async () => {
    for (const model of ['k/openai', 'k/anthropic', 'k/gemini', 'k/bedrock', 'k/native']) {
      const first = await ok200(await request('POST', '/v1/responses', { model, ...SCENARIOS['function calls']!.body }), `${model} first`)
      const call = first.output.find((item: any) => item.type === 'function_call')
      const second = await ok200(
        await request('POST', '/v1/responses', {
          model,
          previous_response_id: first.id,
          input: [{ type: 'function_call_output', call_id: call.call_id, output: '21C' }],
          tools: [tool('get_weather')],
        }),
        `${model} second`,
      )
      expectConforms('Response', second, `${model} second`, gatewayErrors(model))
      if (model === 'k/native') continue
      const list = await ok200(await request('GET', `/v1/responses/${second.id}/input_items`), `${model} items`)
      expectConforms('ResponseItemList', list, `${model} input items of the second turn`)
    }
  })

  test('POST /v1/responses/input_tokens is a TokenCountsResource, for every target', async () => {
    for (const model of ALIASES) {
      const what = `${model} input_tokens`
      const body = { model, instructions: 'be brief', input: 'count these words', tools: [tool('get_weather')] }
      expectConforms('TokenCountsResource', await ok200(await request('POST', '/v1/responses/input_tokens', body), what), what)
    }
  })
})

describe('a stream the upstream breaks', () => {
  test('translated: the events before it and the response.failed that ends it validate', async () => {
    const response = await request('POST', '/v1/responses', { model: 'k/bedrock', input: '[[exception:ModelStreamErrorException]] hello', stream: true })
    expect(response.status).toBe(200)
    const events = sseEvents(await response.text())
    expect(events.at(-1)!.data.type).toBe('response.failed')
    events.forEach((event, i) => {
      expectEventConforms(event.data, `broken stream event ${i} (${event.data.type})`)
      noteType('k/bedrock', event.data.type)
    })
  })
})

const TEXT_EVENTS = ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added', 'response.output_text.delta']
const MORE_TEXT_EVENTS = ['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']
const CALL_EVENTS = ['response.function_call_arguments.delta', 'response.function_call_arguments.done']
const REASONING_EVENTS = ['response.reasoning_summary_part.added', 'response.reasoning_summary_text.delta', 'response.reasoning_summary_text.done']

test('every event type the gateway writes was validated, translated and native', () => {
  const expected = [...TEXT_EVENTS, ...MORE_TEXT_EVENTS, ...CALL_EVENTS, ...REASONING_EVENTS]
  expect([...seen.translated].sort()).toEqual(expect.arrayContaining([...expected, 'response.failed']))
  expect([...seen.native].sort()).toEqual(expect.arrayContaining(expected))
})
