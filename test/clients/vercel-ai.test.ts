/**
 * The Vercel AI SDK's Anthropic provider (`ai`, `@ai-sdk/anthropic`, pinned in package.json) against a
 * gateway process, through an alias on a fake OpenAI-compatible upstream (test/support/fakes):
 * `generateObject` with `structuredOutputMode: 'outputFormat'`, and plain text. The provider is
 * built exactly as docs/clients/vercel-ai.md shows, and the page's examples are run as written.
 */
import { createAnthropic } from '@ai-sdk/anthropic'
import { generateObject, generateText, Output } from 'ai'
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { z } from 'zod'
import { OPENAI_MARKER } from '../support/fakes/openai'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { ALIASES, type ClientsGateway, describeCalls, docBlock, docPage, explained, runSnippet, startClientsGateway } from './harness'

setDefaultTimeout(TEST_MS)

const PAGE = docPage('vercel-ai.md')
const Weather = z.object({ city: z.string(), temperature_c: z.number(), conditions: z.enum(['sunny', 'cloudy', 'rain']) })

describe('Vercel AI SDK (ai 7.0.173, @ai-sdk/anthropic 4.0.105) through the gateway', () => {
  let cg: ClientsGateway
  setup(async () => {
    cg = await startClientsGateway()
  })
  teardown(async () => {
    await cg.stop()
  })

  /** The provider as the docs page builds it. */
  const provider = () => createAnthropic({ baseURL: `${cg.url}/v1`, apiKey: cg.key })
  const context = (before: number) => () =>
    `the upstream got:\n${describeCalls(cg.openai.chatCalls().slice(before))}\n--- gateway log (tail)\n${cg.gateway.output().slice(-3000)}`

  test("generateObject with structuredOutputMode 'outputFormat' through an OpenAI-compatible alias: the object the upstream answered", async () => {
    const before = cg.openai.chatCalls().length
    const { object } = await explained(
      () =>
        generateObject({
          model: provider()(ALIASES.openai),
          schema: Weather,
          prompt: 'The weather in Paris.',
          maxRetries: 0,
          providerOptions: { anthropic: { structuredOutputMode: 'outputFormat' } },
        }),
      context(before),
    )
    expect(object).toEqual({ city: 'sample city', temperature_c: 7, conditions: 'sunny' })
    const sent = cg.openai.chatCalls().at(-1)!.body
    expect(sent.response_format).toMatchObject({ type: 'json_schema', json_schema: { strict: true } })
    expect(sent.tools).toBeUndefined()
  })

  test("generateText with Output.object and structuredOutputMode 'outputFormat' through an OpenAI-compatible alias", async () => {
    const before = cg.openai.chatCalls().length
    const { output } = await explained(
      () =>
        generateText({
          model: provider()(ALIASES.openai),
          output: Output.object({ schema: Weather }),
          prompt: 'The weather in Paris.',
          maxRetries: 0,
          providerOptions: { anthropic: { structuredOutputMode: 'outputFormat' } },
        }),
      context(before),
    )
    expect(output).toEqual({ city: 'sample city', temperature_c: 7, conditions: 'sunny' })
    expect(cg.openai.chatCalls().at(-1)!.body.response_format).toMatchObject({ type: 'json_schema', json_schema: { strict: true } })
  })

  test('generateText through an OpenAI-compatible alias', async () => {
    const before = cg.openai.chatCalls().length
    const { text } = await explained(() => generateText({ model: provider()(ALIASES.openai), prompt: 'Say hello', maxRetries: 0 }), context(before))
    expect(text).toContain(OPENAI_MARKER)
  })

  test('the key as authToken (Authorization: Bearer) works too', async () => {
    const { text } = await generateText({
      model: createAnthropic({ baseURL: `${cg.url}/v1`, authToken: cg.key })(ALIASES.mock),
      prompt: 'hello bearer',
      maxRetries: 0,
    })
    expect(text).toContain('hello bearer')
  })

  describe("the docs page's examples, run as written", () => {
    for (const tag of ['text', 'object', 'output']) {
      test(tag, async () => {
        const run = await runSnippet(docBlock(PAGE, 'ts', tag), cg.url, cg.key)
        if (run.code !== 0 || !run.stdout.trim()) throw new Error(`the ${tag} example failed (exit ${run.code}):\n${run.stdout}\n${run.stderr}`)
        expect(run.stdout).toContain(tag === 'text' ? OPENAI_MARKER : 'sample city')
      })
    }
  })
})
