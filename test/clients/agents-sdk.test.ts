/**
 * The OpenAI Agents SDK (`@openai/agents`, pinned in package.json) with its default model
 * (`OpenAIResponsesModel`, the Responses API through the openai SDK) against a gateway process: an
 * agent with a function tool, `run()` and `run({stream: true})`, through an OpenAI-native alias (a
 * fake Responses API, `responses = "native"`), an OpenAI-compatible chat alias, an Anthropic alias
 * and the mock. The default client is set as docs/clients/agents-sdk.md shows, and the page's
 * examples are run as written. Tracing (which would post to OpenAI's own endpoint) is off, and the
 * examples run with their HTTP(S) proxy on a trap: nothing leaves 127.0.0.1.
 */
import { Agent, run, setDefaultOpenAIClient, setTracingDisabled, tool } from '@openai/agents'
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import OpenAI from 'openai'
import { z } from 'zod'
import { OPENAI_MARKER } from '../support/fakes/openai'
import { setup, teardown, TEST_MS } from '../support/hooks'
import {
  type ClientsGateway,
  describeResponsesExchanges,
  docBlock,
  docPage,
  DOCS_GATEWAY_URL,
  type Exchange,
  explained,
  phoneHomeTrap,
  recordingFetch,
  RESPONSES_TARGETS,
  runSnippet,
  startClientsGateway,
  toolLoopAnswer,
  toolInputEverywhere,
  WEATHER,
} from './harness'
import { clientMatrix, matrixCheck } from './matrix'

setDefaultTimeout(TEST_MS)

const VERSION = '0.20.0'
const PAGE = docPage('agents-sdk.md')

const matrix = clientMatrix({
  id: 'agents-sdk',
  order: 20,
  name: `OpenAI Agents SDK ${VERSION} (default model: \`OpenAIResponsesModel\`)`,
  page: 'clients/agents-sdk.md',
  test: 'test/clients/agents-sdk.test.ts',
  rows: [
    { id: 'run', label: '`run(agent)` with a function tool, to the final output' },
    { id: 'run-stream', label: '`run(agent, input, {stream: true})` with a function tool' },
  ],
})

describe(`OpenAI Agents SDK ${VERSION} (its default Responses model) through the gateway`, () => {
  let cg: ClientsGateway
  let trap: ReturnType<typeof phoneHomeTrap>
  let exchanges: Exchange[] = []

  setup(async () => {
    trap = phoneHomeTrap()
    cg = await startClientsGateway(toolInputEverywhere(WEATHER.toolInput))
    // As the page sets it up, with a recording fetch.
    const recorder = recordingFetch()
    exchanges = recorder.exchanges
    setDefaultOpenAIClient(new OpenAI({ baseURL: `${cg.url}/v1`, apiKey: cg.key, fetch: recorder.fetch, maxRetries: 0 }))
    setTracingDisabled(true)
  })
  teardown(async () => {
    await cg.stop()
    trap?.stop()
  })

  const getWeather = tool({
    name: 'get_weather',
    description: 'The current weather in a city',
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => (city === WEATHER.city ? WEATHER.answer : `no weather for ${city}`),
  })
  const prompt = `What is the weather in ${WEATHER.city}? ${WEATHER.directive}`
  const context = (from: number) => () =>
    `the SDK sent:\n${describeResponsesExchanges(exchanges.slice(from))}\n--- gateway log (tail)\n${cg.gateway.output().slice(-3000)}`

  for (const { kind, alias, marker } of RESPONSES_TARGETS) {
    const expectFinal = (text: unknown) => {
      if (marker) expect(String(text)).toContain(toolLoopAnswer(marker, WEATHER.answer))
      else expect(String(text)).toBe(`What is the weather in ${WEATHER.city}?`)
    }
    /** The SDK's requests of one run: two Responses calls, the second carrying the tool's output for the first's call. */
    const expectToolLoop = (from: number, stream: boolean) => {
      const sent = exchanges.slice(from)
      expect(sent.map((e) => `${e.status} ${new URL(e.url).pathname}`)).toEqual(['200 /v1/responses', '200 /v1/responses'])
      expect(sent.every((e) => (e.body.stream ?? false) === stream)).toBe(true)
      const items = sent[1]!.body.input as { type?: string; call_id?: string; output?: unknown }[]
      const output = items.find((item) => item.type === 'function_call_output')
      expect(output?.output).toBe(WEATHER.answer)
    }

    test(
      `${kind} (${alias}): run() with a function tool: the call, the tool's result, the final output`,
      matrix.cell('run', kind, async () => {
        const from = exchanges.length
        const agent = new Agent({ name: 'Assistant', instructions: 'You are terse.', model: alias, tools: [getWeather] })
        const result = await explained(() => run(agent, prompt), context(from))
        expectFinal(result.finalOutput)
        expectToolLoop(from, false)
      }),
    )

    test(
      `${kind} (${alias}): run({stream: true}) with a function tool`,
      matrix.cell('run-stream', kind, async () => {
        const from = exchanges.length
        const agent = new Agent({ name: 'Assistant', instructions: 'You are terse.', model: alias, tools: [getWeather] })
        const text = await explained(async () => {
          const stream = await run(agent, prompt, { stream: true })
          let streamed = ''
          for await (const chunk of stream.toTextStream()) streamed += chunk
          await stream.completed
          if (stream.error) throw stream.error
          return streamed
        }, context(from))
        expectFinal(text)
        expectToolLoop(from, true)
      }),
    )
  }

  test('what the default model sends: the Responses API, the agent instructions, the flat function tool', () => {
    const first = exchanges.find((e) => e.body?.tools)!
    expect(new URL(first.url).pathname).toBe('/v1/responses')
    expect(first.body.instructions).toBe('You are terse.')
    expect(first.body.tools).toEqual([
      expect.objectContaining({ type: 'function', name: 'get_weather', strict: true, parameters: expect.objectContaining({ type: 'object' }) }),
    ])
    expect(first.headers.get('user-agent')).toContain('Agents/JavaScript')
  })

  describe("the docs page's examples, run as written", () => {
    for (const tag of ['agent', 'stream']) {
      test(tag, async () => {
        const run = await runSnippet(docBlock(PAGE, 'ts', tag), cg.url, cg.key, {
          HTTPS_PROXY: trap.url,
          HTTP_PROXY: trap.url,
          NO_PROXY: '127.0.0.1,localhost',
        })
        if (run.code !== 0 || !run.stdout.trim()) throw new Error(`the ${tag} example failed (exit ${run.code}):\n${run.stdout}\n${run.stderr}`)
        expect(run.stdout).toContain('the tool said: sunny, 21 C in Paris')
      })
    }
    test('env: the settings as environment variables', async () => {
      const env: Record<string, string> = { HTTPS_PROXY: trap.url, HTTP_PROXY: trap.url, NO_PROXY: '127.0.0.1,localhost' }
      for (const line of docBlock(PAGE, 'sh', 'env').split('\n')) {
        const match = /^export ([A-Z0-9_]+)=(\S+)/.exec(line)
        if (match) env[match[1]!] = match[2]!.replace(DOCS_GATEWAY_URL, cg.url).replace('$CHATGATE_KEY', cg.key)
      }
      expect(Object.keys(env)).toEqual(expect.arrayContaining(['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'OPENAI_AGENTS_DISABLE_TRACING']))
      const run = await runSnippet(docBlock(PAGE, 'ts', 'env'), cg.url, cg.key, env)
      if (run.code !== 0) throw new Error(`the env example failed (exit ${run.code}):\n${run.stdout}\n${run.stderr}`)
      expect(run.stdout).toContain(`${OPENAI_MARKER} heard: Say hello`)
    })
    test('and connected to nothing but the gateway', () => {
      expect(trap.attempts).toEqual([])
    })
  })

  matrixCheck()
})
