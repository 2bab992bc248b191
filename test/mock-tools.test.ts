import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import OpenAI from 'openai'
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions'
import { tempDir } from './support/gateway'
import { type GatewayProcess, runCli, spawnGateway } from './support/process'
import { setup, teardown, TEST_MS } from './support/hooks'

setDefaultTimeout(TEST_MS)

const TOOLS: ChatCompletionTool[] = [
  {
    type: 'function',
    function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
  },
  { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} } } },
]

describe('the mock calls tools, so an agent loop runs offline', () => {
  const dir = tempDir()
  const env = { GATEWAY_DB: `${dir.path}/gateway.sqlite` }
  let gateway: GatewayProcess
  let client: OpenAI
  setup(async () => {
    gateway = await spawnGateway(env, { expectFirstKey: true })
    client = new OpenAI({ apiKey: gateway.firstKey!, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
  })
  teardown(async () => {
    await gateway.stop()
    dir[Symbol.dispose]()
  })

  test('tool_choice "required": one call of the first tool; the result sent back gets the answer (official openai SDK)', async () => {
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'weather in Paris please' }]
    const first = await client.chat.completions.create({ model: 'local/echo', messages, tools: TOOLS, tool_choice: 'required' })
    const choice = first.choices[0]!
    expect(choice.finish_reason).toBe('tool_calls')
    expect(choice.message.content).toBeNull()
    expect(choice.message.tool_calls).toEqual([{ id: 'call_mock_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }])

    // The loop: the assistant turn and the tool's result go back; no tool is forced now.
    messages.push(choice.message, { role: 'tool', tool_call_id: 'call_mock_1', content: '18 degrees and sunny' })
    const second = await client.chat.completions.create({ model: 'local/echo', messages, tools: TOOLS })
    expect(second.choices[0]!.finish_reason).toBe('stop')
    expect(second.choices[0]!.message.content).toBe('weather in Paris please')
    expect(second.choices[0]!.message.tool_calls).toBeUndefined()
  })

  test('a named function, streamed: the SDK assembles the call from the chunks', async () => {
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'what time is it' }]
    const stream = client.chat.completions.stream({
      model: 'local/echo',
      messages,
      tools: TOOLS,
      tool_choice: { type: 'function', function: { name: 'get_time' } },
      stream: true,
    })
    const final = await stream.finalChatCompletion()
    expect(final.choices[0]!.finish_reason).toBe('tool_calls')
    expect(final.choices[0]!.message.tool_calls).toEqual([{ id: 'call_mock_1', type: 'function', function: { name: 'get_time', arguments: '{}' } }])

    messages.push(final.choices[0]!.message, { role: 'tool', tool_call_id: 'call_mock_1', content: 'noon' })
    let text = ''
    for await (const chunk of await client.chat.completions.create({ model: 'local/echo', messages, stream: true }))
      text += chunk.choices[0]?.delta?.content ?? ''
    expect(text).toBe('what time is it')
  })

  test('tool_choice "auto" (or none given) answers in text; the loop is counted in usage', async () => {
    const answer = await client.chat.completions.create({
      model: 'local/echo',
      messages: [{ role: 'user', content: 'just talk' }],
      tools: TOOLS,
      tool_choice: 'auto',
    })
    expect(answer.choices[0]!.message.content).toBe('just talk')
    const usage = await runCli(['usage', '--json'], env)
    expect((JSON.parse(usage.stdout) as { totals: { requests: number } }).totals.requests).toBe(5)
  })
})
