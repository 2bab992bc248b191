/**
 * Codex CLI itself (`@openai/codex`, pinned in package.json), run headless (`codex exec`) against a
 * gateway process with the settings of docs/clients/codex.md (a `model_providers` entry with
 * `wire_api = "responses"` and `env_key` holding a gateway key, written into a throwaway
 * CODEX_HOME), through a tool loop to its final answer: the model asks for a shell command, Codex
 * runs it, sends the output back, prints the model's answer. Once per kind of upstream: an
 * OpenAI-native alias (a fake Responses API, `responses = "native"`), an OpenAI-compatible chat alias,
 * an Anthropic alias and the mock; each with reasoning on (`model_reasoning_effort`), so the
 * reasoning of the tool-call turn makes the round trip: the native upstream's encrypted content, the
 * chat upstream's reasoning_content and Anthropic's signed thinking, the latter two sealed by the
 * gateway in `encrypted_content` (Codex sends `store: false` and `include:
 * ["reasoning.encrypted_content"]`).
 *
 * The binary: `@openai/codex` is a Node launcher (`bin/codex.js`) that execs the native binary of a
 * platform package (`@openai/codex-linux-x64`..., optional dependencies aliased to
 * `@openai/codex@<version>-<platform>`), shipped whole in the npm tarball: no install script, no
 * download. The test runs that binary directly.
 *
 * Nothing leaves 127.0.0.1: every URL Codex is given is the gateway's (through a recording TCP tap,
 * to see what Codex sends), and its HTTP(S) proxy is a trap on 127.0.0.1 (NO_PROXY exempts
 * 127.0.0.1) that records each connection and refuses it at once; the last test asserts there was
 * none. It cannot hang: no retries (`request_max_retries`/`stream_max_retries` 0), a stream idle
 * bound, stdin closed, and a process timeout below the test's.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { RESPONSES_MARKER } from '../support/fakes/openai-responses'
import { ROOT } from '../support/gateway'
import { setup, teardown, TEST_MS } from '../support/hooks'
import {
  ALIASES,
  type ClientsGateway,
  docBlock,
  docPage,
  DOCS_GATEWAY_URL,
  phoneHomeTrap,
  RESPONSES_TARGETS,
  startClientsGateway,
  toolInputEverywhere,
} from './harness'
import { clientMatrix, matrixCheck, type TargetKind } from './matrix'
import { type Tap, tcpTap } from './tap'

setDefaultTimeout(TEST_MS)

const CODEX_VERSION = '0.171.0'
const TOOL_OUTPUT = 'chatgate-tool-ran'
const TOOL_COMMAND = `echo ${TOOL_OUTPUT}`
const PROMPT = 'Run the marker command and tell me what it printed'

const PAGE = docPage('codex.md')

/** The native binary of this platform's package (see the header), resolved from the launcher package as its launcher does. */
function codexBinary(): string {
  const triples: Record<string, string> = {
    'linux-x64': 'x86_64-unknown-linux-musl',
    'linux-arm64': 'aarch64-unknown-linux-musl',
    'darwin-x64': 'x86_64-apple-darwin',
    'darwin-arm64': 'aarch64-apple-darwin',
  }
  const platform = `${process.platform}-${process.arch}`
  const triple = triples[platform]
  if (!triple) throw new Error(`no Codex binary for ${platform}`)
  const launcher = createRequire(join(ROOT, 'package.json')).resolve('@openai/codex/package.json')
  const pkg = createRequire(launcher).resolve(`@openai/codex-${platform}/package.json`)
  return join(dirname(pkg), 'vendor', triple, 'bin', 'codex')
}

const matrix = clientMatrix({
  id: 'codex',
  order: 10,
  name: `Codex CLI ${CODEX_VERSION}`,
  page: 'clients/codex.md',
  test: 'test/clients/codex.test.ts',
  rows: [{ id: 'tool-loop', label: '`codex exec`: a shell tool loop to the final answer (streamed, `store: false`, reasoning round trip)' }],
})

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

describe(`Codex CLI ${CODEX_VERSION}, headless (codex exec), through the gateway`, () => {
  let cg: ClientsGateway
  let tap: Tap
  let trap: ReturnType<typeof phoneHomeTrap>
  const dirs: string[] = []
  const binary = codexBinary()
  const toolInput = (name: string) => (name === 'exec_command' ? { cmd: TOOL_COMMAND } : {})

  setup(async () => {
    trap = phoneHomeTrap()
    const everywhere = toolInputEverywhere(toolInput)
    cg = await startClientsGateway({
      ...everywhere,
      responses: { toolInput, preferTools: ['exec_command'] },
      azure: { chat: { toolInput }, responses: { toolInput, preferTools: ['exec_command'] } },
    })
    tap = tcpTap(cg.url)
  })
  teardown(async () => {
    tap?.stop()
    await cg?.stop()
    trap?.stop()
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  })

  /** The page's config.toml, pointing at the gateway (through the tap). */
  const pageConfig = () => docBlock(PAGE, 'toml', 'config').replaceAll(DOCS_GATEWAY_URL, tap.url)

  /** `codex <args>` with the page's settings in a throwaway CODEX_HOME, in an empty working directory. */
  async function codex(args: string[], key = cg.key): Promise<Run> {
    const home = mkdtempSync(join(tmpdir(), 'chatgate-codex-home-'))
    const work = mkdtempSync(join(tmpdir(), 'chatgate-codex-work-'))
    dirs.push(home, work)
    // The page's settings, and its offline one (no plugin sync from GitHub and chatgpt.com at start).
    writeFileSync(join(home, 'config.toml'), `${pageConfig()}\n${docBlock(PAGE, 'toml', 'offline')}`)
    // Guards of the test only (not settings a user needs): one attempt, a bound on a silent stream.
    const guards = [
      'model_providers.chatgate.request_max_retries=0',
      'model_providers.chatgate.stream_max_retries=0',
      'model_providers.chatgate.stream_idle_timeout_ms=20000',
    ].flatMap((setting) => ['-c', setting])
    const proc = Bun.spawn([binary, ...guards, ...args], {
      cwd: work,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: home,
        CODEX_HOME: home,
        CHATGATE_KEY: key,
        HTTPS_PROXY: trap.url,
        HTTP_PROXY: trap.url,
        ALL_PROXY: trap.url,
        NO_PROXY: '127.0.0.1,localhost',
      },
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
      // A safety net below the test's own bound, so a hang fails with Codex's output.
      timeout: TEST_MS - 15_000,
    })
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    return { code, stdout, stderr }
  }

  /** What a failed expectation shows: Codex's output and the gateway's recent log lines. */
  const explain = (run: Run) =>
    `exit ${run.code}\n--- stdout\n${run.stdout}\n--- stderr (tail)\n${run.stderr.slice(-3000)}\n--- gateway log (tail)\n${cg.gateway.output().slice(-3000)}`

  /** The first line of a failure says what Codex reported (its last error line), so the matrix can show it. */
  function expectFinalAnswer(run: Run, ...needles: string[]) {
    if (run.code === 0 && needles.every((needle) => run.stdout.includes(needle))) return
    const reported =
      run.stderr
        .split('\n')
        .filter((line) => /error|unexpected status|failed/i.test(line))
        .at(-1)
        ?.trim() ?? `exit ${run.code}, no final answer`
    throw new Error(`codex exec did not print the final answer: ${reported}\n${explain(run)}`)
  }

  test('the pinned binary runs here, offline (codex --version)', async () => {
    const run = await codex(['--version'])
    expect(run.stdout.trim()).toBe(`codex-cli ${CODEX_VERSION}`)
  })

  const targets = RESPONSES_TARGETS.filter((t): t is { kind: TargetKind; alias: string; marker: string } => t.marker !== null)

  for (const { kind, alias, marker } of targets) {
    test(
      `${kind} (${alias}): a tool loop: the model asks for a shell command, Codex runs it, sends its output back and prints the final answer`,
      matrix.cell('tool-loop', kind, async () => {
        const sent = tap.requests.length
        const run = await codex(['exec', '--skip-git-repo-check', '-m', alias, PROMPT])
        // The fake's final text quotes the tool output it got back: the command ran and its output made the round trip.
        expectFinalAnswer(run, marker, TOOL_OUTPUT)
        const requests = tap.requests.slice(sent).filter((r) => r.method === 'POST')
        expect(requests.map((r) => r.path)).toEqual(['/v1/responses', '/v1/responses'])
        const second = JSON.parse(requests[1]!.body.toString()) as { input: { type: string; encrypted_content?: string }[] }
        const types = second.input.map((item) => item.type)
        expect(types.slice(-3)).toEqual(['reasoning', 'function_call', 'function_call_output'])
        // The reasoning item Codex sends back carries what the gateway (or the native upstream) sealed in it.
        expect(second.input.at(-3)!.encrypted_content).toBeString()
      }),
    )
  }

  test(
    'the mock (local/echo): a tool loop driven by a [[tool:...]] directive',
    matrix.cell('tool-loop', 'mock', async () => {
      const prompt = `[[tool:exec_command {"cmd":"${TOOL_COMMAND}"}]] chatgate-mock-final`
      const run = await codex(['exec', '--skip-git-repo-check', '-m', ALIASES.mock, prompt])
      expectFinalAnswer(run, 'chatgate-mock-final')
      expect(run.stderr).toContain(TOOL_OUTPUT)
    }),
  )

  test('what reached each upstream: the native one got the body as Codex sent it (model replaced); the others, the reasoning back', () => {
    // Native: byte for byte what Codex wrote, only the model replaced.
    const codexBodies = tap.requests.filter((r) => r.method === 'POST' && r.path === '/v1/responses').map((r) => r.body.toString())
    const native = cg.responses.createCalls()
    expect(native.length).toBe(2)
    for (const call of native) {
      const original = codexBodies.find((body) => body.replace(`"model":"${ALIASES.native}"`, '"model":"gpt-5.6"') === call.text)
      expect(original).toBeDefined()
    }
    // The chat upstream got its reasoning_content back on the assistant message of the call.
    const chatFollowUp = cg.openai.chatCalls().find((call) => call.text.includes(TOOL_OUTPUT))!
    const assistant = (chatFollowUp.body.messages as { role: string; reasoning_content?: string; tool_calls?: unknown[] }[]).findLast(
      (m) => m.role === 'assistant',
    )!
    expect(assistant.tool_calls).toBeDefined()
    expect(assistant.reasoning_content).toStartWith('fake-openai reasoned')
    // Anthropic got its signed thinking back, first in the assistant turn of the call.
    const anthropicFollowUp = cg.anthropic.messageCalls().find((call) => call.text.includes(TOOL_OUTPUT))!
    const turn = (anthropicFollowUp.body.messages as { role: string; content: { type: string; signature?: string }[] }[]).findLast(
      (m) => m.role === 'assistant',
    )!
    expect(turn.content[0]!.type).toBe('thinking')
    expect(turn.content[0]!.signature).toStartWith('fakesig_a_')
    expect(anthropicFollowUp.body.thinking?.type).toBe('enabled')
    // Translated: the namespace's functions flattened, the hosted web_search removed (kept as Anthropic's server tool).
    const chatTools = cg.openai.chatCalls()[0]!.body.tools.map((t: { function: { name: string } }) => t.function.name)
    expect(chatTools).toContain('multi_agent_v1__spawn_agent')
    expect(cg.openai.chatCalls()[0]!.text).not.toContain('web_search')
    const anthropicTools = cg.anthropic.messageCalls()[0]!.body.tools.map((t: { name: string; type?: string }) => `${t.name}:${t.type ?? ''}`)
    expect(anthropicTools).toContain('web_search:web_search_20250305')
  })

  test('what Codex sends (recorded at the tap): headers, fields and item types, as docs/clients/codex.md says', () => {
    const first = tap.requests.find((r) => r.method === 'POST' && r.path === '/v1/responses')!
    expect(first.headers).toMatchObject({
      accept: 'text/event-stream',
      'accept-encoding': 'zstd,gzip',
      authorization: `Bearer ${cg.key}`,
      originator: 'codex_exec',
    })
    expect(first.headers['user-agent']).toStartWith(`codex_exec/${CODEX_VERSION}`)
    for (const name of ['session-id', 'thread-id', 'x-client-request-id', 'x-codex-window-id', 'x-codex-turn-metadata', 'x-codex-beta-features'])
      expect(first.headers[name]).toBeString()
    expect(first.headers['openai-beta']).toBeUndefined()
    const body = JSON.parse(first.body.toString())
    expect(Object.keys(body).sort()).toEqual(
      [
        'client_metadata',
        'include',
        'input',
        'model',
        'parallel_tool_calls',
        'prompt_cache_key',
        'reasoning',
        'store',
        'stream',
        'tool_choice',
        'tools',
      ].sort(),
    )
    expect(body).toMatchObject({ stream: true, store: false, include: ['reasoning.encrypted_content'], tool_choice: 'auto', parallel_tool_calls: true })
    expect(body.reasoning).toEqual({ effort: 'medium', summary: 'auto' })
    expect([...new Set(body.input.map((i: { type: string; role?: string }) => `${i.type}:${i.role}`))]).toEqual(['message:developer', 'message:user'])
    const messageShapes = body.input.map((i: { id?: unknown; content: { type: string }[] }) =>
      String(i.id).startsWith('msg_') && i.content.every((p) => p.type === 'input_text') ? 'ok' : JSON.stringify(i).slice(0, 200),
    )
    expect(new Set(messageShapes)).toEqual(new Set(['ok']))
    expect(body.instructions).toBeUndefined()
    expect(body.previous_response_id).toBeUndefined()
    // The next turn: the whole conversation again, the tool round as reasoning, call and output (a string).
    const next = JSON.parse(tap.requests.filter((r) => r.method === 'POST' && r.path === '/v1/responses')[1]!.body.toString())
    expect(next.input.slice(0, body.input.length)).toEqual(body.input)
    const round = next.input.slice(body.input.length)
    expect(round.map((i: { type: string }) => i.type)).toEqual(['reasoning', 'function_call', 'function_call_output'])
    expect(round[0].summary).toBeArray()
    expect(typeof round[2].output).toBe('string')
    expect(body.tools.map((t: { type: string; name?: string }) => `${t.type}:${t.name ?? ''}`)).toEqual([
      'function:exec_command',
      'function:write_stdin',
      'function:request_user_input',
      'function:view_image',
      'namespace:multi_agent_v1',
      'function:get_goal',
      'function:create_goal',
      'function:update_goal',
      'web_search:',
    ])
    // No WebSocket attempt for a custom provider.
    expect(tap.requests.some((r) => r.headers.upgrade)).toBe(false)
  })

  test("the page's command lines run as written (against the gateway, with the page's config)", async () => {
    const lines = docBlock(PAGE, 'sh', 'run')
      .split('\n')
      .filter((line) => line.startsWith('codex '))
    expect(lines.length).toBeGreaterThan(0)
    for (const line of lines) {
      const args = [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!).slice(1)
      const run = await codex(args)
      if (run.code !== 0 || run.stdout.trim() === '') throw new Error(`the page's command failed: ${line}\n${explain(run)}`)
    }
  })

  test('a provider that allows WebSockets (supports_websockets = true): the gateway answers the upgrade with 426 and Codex goes on over SSE', async () => {
    const sent = tap.requests.length
    const run = await codex(['-c', 'model_providers.chatgate.supports_websockets=true', 'exec', '--skip-git-repo-check', PROMPT])
    expectFinalAnswer(run, RESPONSES_MARKER, TOOL_OUTPUT)
    const requests = tap.requests.slice(sent)
    expect(requests.map((r) => `${r.method} ${r.path}${r.headers.upgrade ? ` upgrade: ${r.headers.upgrade}` : ''}`)).toEqual([
      'GET /v1/responses upgrade: websocket',
      'POST /v1/responses',
      'POST /v1/responses',
    ])
    // What the page's troubleshooting quotes.
    expect(run.stderr).toContain('failed to connect to Responses WebSocket')
  })

  test("a wrong key and an unknown model: the errors the page's troubleshooting quotes", async () => {
    const wrongKey = await codex(['exec', '--skip-git-repo-check', PROMPT], 'sk-cg-wrong')
    expect(wrongKey.code).not.toBe(0)
    expect(wrongKey.stderr).toContain('ERROR: unexpected status 401 Unauthorized: Unauthorized, url: ')
    const unknown = await codex(['exec', '--skip-git-repo-check', '-m', 'nope/nope', PROMPT])
    expect(unknown.code).not.toBe(0)
    expect(unknown.stderr).toContain('ERROR: The model "nope/nope" does not exist. GET /v1/models lists the available models.')
    for (const quoted of [
      'unexpected status 401 Unauthorized: Unauthorized',
      'GET /v1/models lists the available models.',
      'failed to connect to Responses WebSocket',
    ])
      expect(PAGE).toContain(quoted)
  })

  test('with the settings of the page (and the test guards), Codex connected to nothing but the gateway: no phoning home', () => {
    expect(trap.attempts).toEqual([])
  })

  matrixCheck()
})
