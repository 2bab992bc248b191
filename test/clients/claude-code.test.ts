/**
 * Claude Code itself (`@anthropic-ai/claude-code`, pinned in package.json), run headless (`claude -p`)
 * against a gateway process, on the mock alias, an alias on a fake Anthropic upstream and an alias on
 * a fake OpenAI-compatible upstream, with the key as Bearer (`ANTHROPIC_AUTH_TOKEN`) and as
 * `x-api-key` (`ANTHROPIC_API_KEY`). The settings come from docs/clients/claude-code.md, so the page
 * is what is verified.
 *
 * The binary: the package's `bin/claude.exe` is a stub that its postinstall replaces with the native
 * binary of the platform package (`@anthropic-ai/claude-code-<platform>`, an optional dependency).
 * Package managers that block lifecycle scripts (bun does unless the package is trusted) leave the
 * stub, so the test runs the platform package's binary directly: it is there either way.
 *
 * Claude Code never reaches the internet here: every URL it is given is 127.0.0.1, non-essential
 * traffic is off, and its HTTP(S) proxy is a trap on 127.0.0.1 (NO_PROXY exempts 127.0.0.1) that
 * records each connection and refuses it at once, so a phone-home attempt neither leaves the
 * machine nor hangs, and the last test asserts there was none. (Without
 * CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, 2.1.332 opens three connections to
 * api.anthropic.com:443 per `claude -p` run even with ANTHROPIC_BASE_URL set.)
 *
 * The runs take about a second each, most of it Claude Code starting: the tests run side by side
 * (a few Claude Code processes at a time), and the last one, which reads the trap, after all of
 * them. Each run has a HOME and working directory of its own, which Claude Code writes into the
 * environment block of every request it sends, so a test picks out what its own run sent to an
 * upstream (`sentBy`) whatever the others send meanwhile.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { ANTHROPIC_MARKER } from '../support/fakes/anthropic'
import type { RecordedCall } from '../support/fakes/common'
import { OPENAI_MARKER } from '../support/fakes/openai'
import { ROOT } from '../support/gateway'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { limit } from '../support/limit'
import { waitFor } from '../support/wait'
import { AZURE_CHAT_MARKER } from '../support/fakes/azure'
import { BEDROCK_MARKER } from '../support/fakes/bedrock'
import { GEMINI_MARKER } from '../support/fakes/gemini'
import {
  ALIASES,
  type ClientsGateway,
  docBlock,
  docPage,
  DOCS_GATEWAY_URL,
  FAKE_ANTHROPIC_KEY,
  NO_RESPONSES_REQUESTS,
  startClientsGateway,
  VERTEX_CLAUDE_MARKER,
} from './harness'
import { clientMatrix, matrixCheck, type TargetKind } from './matrix'

setDefaultTimeout(TEST_MS)

const CLAUDE_CODE_VERSION = '2.1.332'

const matrix = clientMatrix({
  id: 'claude-code',
  order: 5,
  name: `Claude Code ${CLAUDE_CODE_VERSION} (the Messages API)`,
  page: 'clients/claude-code.md',
  test: 'test/clients/claude-code.test.ts',
  rows: [
    { id: 'prompt', label: '`claude -p`: a prompt, streamed, adaptive thinking, the answer printed' },
    {
      id: 'tool-loop',
      label: '`claude -p` with Bash: the tool loop to the final answer, the tool-call turn sent back with its thinking (signature) unchanged',
    },
  ],
  notApplicable: [NO_RESPONSES_REQUESTS],
})
const TOOL_COMMAND = 'echo chatgate-tool-ran'
const TOOL_OUTPUT = 'chatgate-tool-ran'
const ALLOWED = `Bash(${TOOL_COMMAND})`

/** The native binary of this platform's package (see the header). */
function claudeBinary(): string {
  const libc =
    process.platform === 'linux' && (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } })?.header?.glibcVersionRuntime === undefined
      ? '-musl'
      : ''
  const pkg = `@anthropic-ai/claude-code-${process.platform}-${process.arch}${libc}`
  const require = createRequire(join(ROOT, 'package.json'))
  return join(dirname(require.resolve(`${pkg}/package.json`)), process.platform === 'win32' ? 'claude.exe' : 'claude')
}

const PAGE = docPage('claude-code.md')

/** The `export NAME=VALUE` lines of a block of the page, with the gateway's URL and key in place. */
function pageEnv(tag: string, url: string, key: string): Record<string, string> {
  const env: Record<string, string> = {}
  for (const line of docBlock(PAGE, 'sh', tag).split('\n')) {
    const match = /^export ([A-Z0-9_]+)=(\S+)/.exec(line)
    if (!match) continue
    env[match[1]!] = match[2]!.replace(DOCS_GATEWAY_URL, url).replace('$CHATGATE_KEY', key)
  }
  return env
}

/** A proxy that lets nothing through: it records the first line of each connection (`CONNECT host:443 ...`) and refuses it. */
function phoneHomeTrap() {
  const attempts: string[] = []
  const listener = Bun.listen({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      data(socket, data) {
        attempts.push(data.toString().split('\r\n')[0]!)
        socket.write('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n')
        socket.end()
      },
    },
  })
  return { url: `http://127.0.0.1:${listener.port}`, attempts, stop: () => listener.stop(true) }
}

/** Guards of the test only (not settings a user needs): see the header. */
const testGuards = (trap: string) => ({
  DISABLE_TELEMETRY: '1',
  DISABLE_AUTOUPDATER: '1',
  DISABLE_ERROR_REPORTING: '1',
  // One attempt: a refused request shows at once instead of after Claude Code's backoff.
  CLAUDE_CODE_MAX_RETRIES: '0',
  HTTPS_PROXY: trap,
  HTTP_PROXY: trap,
  NO_PROXY: '127.0.0.1,localhost',
})

type Auth = 'bearer' | 'x-api-key'

interface Run {
  code: number | null
  stdout: string
  stderr: string
  home: string
}

/** The calls a run sent: Claude Code writes its working directory (the run's own HOME) into every request's environment block. */
const sentBy = (calls: RecordedCall[], run: Run) => calls.filter((call) => call.text.includes(run.home))

/** How many Claude Code processes run at once. */
const CLAUDE_AT_ONCE = 4
/**
 * The bound of a test that runs side by side with the others: it may wait for a slot behind them
 * before its own run, so TEST_MS for the wait and TEST_MS for its run.
 */
const SIDE_BY_SIDE_MS = 2 * TEST_MS
const sideBySide = (name: string, fn: () => Promise<void>) => test.concurrent(name, fn, SIDE_BY_SIDE_MS)

describe(`Claude Code ${CLAUDE_CODE_VERSION}, headless, through the gateway`, () => {
  let cg: ClientsGateway
  const homes: string[] = []
  const binary = claudeBinary()
  let trap: ReturnType<typeof phoneHomeTrap>
  const slot = limit(CLAUDE_AT_ONCE)

  setup(async () => {
    trap = phoneHomeTrap()
    const toolInput = (name: string) => (name === 'ToolSearch' ? { query: 'select:WebFetch' } : {})
    const bash = (name: string) => (name === 'Bash' ? { command: TOOL_COMMAND, description: 'Print a marker' } : toolInput(name))
    cg = await startClientsGateway({
      anthropic: { bashCommand: TOOL_COMMAND, toolInput },
      openai: { bashCommand: TOOL_COMMAND, toolInput },
      vertexClaude: { bashCommand: TOOL_COMMAND, toolInput },
      azure: { chat: { bashCommand: TOOL_COMMAND, toolInput } },
      gemini: { toolInput: bash },
      bedrock: { toolInput: bash },
    })
  })
  teardown(async () => {
    await cg.stop()
    trap?.stop()
    for (const home of homes) rmSync(home, { recursive: true, force: true })
  })

  /** `claude <args>` with the page's settings, a throwaway HOME and working directory. */
  async function claude(args: string[], auth: Auth, extraEnv: Record<string, string> = {}): Promise<Run> {
    const home = mkdtempSync(join(tmpdir(), 'chatgate-claude-home-'))
    homes.push(home)
    const env: Record<string, string> = { ...pageEnv('env', cg.url, cg.key) }
    if (auth === 'x-api-key') {
      delete env.ANTHROPIC_AUTH_TOKEN
      Object.assign(env, pageEnv('env-x-api-key', cg.url, cg.key))
    }
    const queued = performance.now()
    return slot(async () => {
      const proc = Bun.spawn([binary, ...args], {
        cwd: home,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ...env, ...testGuards(trap.url), ...extraEnv },
        stdin: 'ignore',
        stdout: 'pipe',
        stderr: 'pipe',
        // A safety net below the test's own bound (less the wait for a slot), so a hang fails with Claude Code's output.
        timeout: Math.max(1_000, Math.round(Math.min(TEST_MS, SIDE_BY_SIDE_MS - (performance.now() - queued)) - 10_000)),
      })
      const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
      return { code, stdout, stderr, home }
    })
  }

  /** What a failed expectation shows: Claude Code's output and the gateway's recent log lines. */
  const explain = (run: Run) =>
    `exit ${run.code}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr.slice(-3000)}\n--- gateway log (tail)\n${cg.gateway.output().slice(-4000)}`

  const expectSuccess = (run: Run, ...needles: string[]) => {
    const ok = run.code === 0 && needles.every((needle) => run.stdout.includes(needle))
    if (!ok) throw new Error(`claude did not print ${needles.map((n) => JSON.stringify(n)).join(' and ')}:\n${explain(run)}`)
  }

  sideBySide(`the pinned binary runs here, offline (claude --version)`, async () => {
    const run = await claude(['--version'], 'bearer')
    expect(run.stdout.trim()).toBe(`${CLAUDE_CODE_VERSION} (Claude Code)`)
  })

  const upstreams = [
    { kind: 'the mock', alias: ALIASES.mock, column: 'mock' },
    { kind: 'an Anthropic upstream', alias: ALIASES.anthropic, column: 'anthropic' },
    { kind: 'an OpenAI-compatible upstream', alias: ALIASES.openai, column: 'chat' },
  ] as const
  const auths: Auth[] = ['bearer', 'x-api-key']
  /** A test body, recorded as the matrix's cell for the Bearer runs (the key's header is the gateway's business, not the upstream's). */
  const cellFor = (row: string, column: TargetKind, auth: Auth, fn: () => Promise<void>) => (auth === 'bearer' ? matrix.cell(row, column, fn) : fn)
  /**
   * The key as x-api-key is tried where its header could matter: on the mock (the gateway's own check)
   * and an Anthropic upstream's prompt (a passthrough, which must put the upstream's key in its place);
   * elsewhere the Bearer run stands for both, each Claude Code run costing a second or two of CPU.
   */
  const tried = (auth: Auth, column: TargetKind, row: string) => auth === 'bearer' || column === 'mock' || (column === 'anthropic' && row === 'prompt')

  for (const { kind, alias, column } of upstreams) {
    for (const auth of auths) {
      if (tried(auth, column, 'prompt'))
        sideBySide(
          `${kind} (${alias}), key as ${auth}: a prompt without tools completes and its answer is printed`,
          cellFor('prompt', column, auth, async () => {
            const run = await claude(['-p', 'Say hello: chatgate-prompt-marker', '--model', alias, '--tools', ''], auth)
            const expected = alias === ALIASES.mock ? 'chatgate-prompt-marker' : alias === ALIASES.anthropic ? ANTHROPIC_MARKER : OPENAI_MARKER
            expectSuccess(run, expected)
            if (alias === ALIASES.anthropic) {
              const sent = sentBy(cg.anthropic.messageCalls(), run)
              expect(sent.length).toBeGreaterThan(0)
              // Whichever header carried the gateway key, the upstream got its own key in x-api-key, and nothing of the gateway's.
              expect(sent.every((call) => call.headers.get('x-api-key') === FAKE_ANTHROPIC_KEY && call.headers.get('authorization') === null)).toBe(true)
            }
            if (alias === ALIASES.openai) expect(sentBy(cg.openai.chatCalls(), run).length).toBeGreaterThan(0)
          }),
        )

      if (tried(auth, column, 'tool-loop'))
        sideBySide(
          `${kind} (${alias}), key as ${auth}: a tool loop: the model calls Bash, Claude Code runs it, sends the result, prints the final text`,
          cellFor('tool-loop', column, auth, async () => {
            if (alias === ALIASES.mock) {
              // The mock calls a tool when a user text holds [[tool:NAME {args}]], then echoes once the result is back.
              const prompt = `[[tool:Bash {"command":"${TOOL_COMMAND}","description":"Print a marker"}]] chatgate-mock-final`
              const run = await claude(['-p', prompt, '--model', alias, '--allowedTools', ALLOWED, '--output-format', 'stream-json', '--verbose'], auth)
              const events = run.stdout
                .split('\n')
                .filter((line) => line.startsWith('{'))
                .map((line) => JSON.parse(line) as Record<string, any>)
              const uses = events.flatMap((e) => (e.type === 'assistant' ? (e.message?.content ?? []) : [])).filter((b: any) => b.type === 'tool_use')
              const results = events.flatMap((e) => (e.type === 'user' ? (e.message?.content ?? []) : [])).filter((b: any) => b.type === 'tool_result')
              const result = events.find((e) => e.type === 'result')
              const ok =
                uses.some((b: any) => b.name === 'Bash' && b.input?.command === TOOL_COMMAND) &&
                results.some((b: any) => JSON.stringify(b.content).includes(TOOL_OUTPUT) && b.is_error !== true) &&
                result?.is_error === false &&
                String(result?.result).includes('chatgate-mock-final')
              if (!ok) throw new Error(`the mock's tool loop did not complete:\n${explain(run)}`)
              return
            }
            const fake = alias === ALIASES.anthropic ? cg.anthropic : cg.openai
            const run = await claude(['-p', 'Run the marker command and tell me what it printed', '--model', alias, '--allowedTools', ALLOWED], auth)
            const marker = alias === ALIASES.anthropic ? ANTHROPIC_MARKER : OPENAI_MARKER
            // The fake's final text quotes the tool result it got back: the command ran and its output made the round trip.
            expectSuccess(run, marker, `(the tool said: ${TOOL_OUTPUT})`)
            const sent = sentBy(fake.calls, run)
            const followUp = sent.find((call) => call.text.includes(TOOL_OUTPUT))
            if (!followUp) throw new Error(`the tool's output never reached the upstream:\n${explain(run)}`)
            // Claude Code thinks adaptively: the thinking of the tool-call turn went back with the call, unchanged.
            const assistant = (followUp.body.messages as { role: string; content: any; reasoning_content?: string; tool_calls?: { id: string }[] }[]).findLast(
              (m) => m.role === 'assistant',
            )!
            if (alias === ALIASES.anthropic) {
              expect(assistant.content[0].type).toBe('thinking')
              expect(assistant.content[0].signature).toStartWith('fakesig_a_')
            } else {
              // The completion that made this tool call (the fake numbers its tool call ids).
              const called = cg.openai.completions.findLast((c) =>
                c.choices[0].message.tool_calls?.some((t: { id: string }) => assistant.tool_calls?.some((a) => a.id === t.id)),
              )
              expect(assistant.reasoning_content).toBe(called.choices[0].message.reasoning_content)
            }
          }),
        )
    }
  }

  /**
   * The cloud kinds: Claude on Vertex AI (rawPredict) and on Bedrock (Converse) first, as enterprise
   * users run Claude Code. Each fake refuses what the real service refuses, Claude's rule on thinking
   * with tools included (the tool-call turn must go back with its signed thinking first). Only Bash is
   * offered (`--tools Bash`), so a fake that calls the first tool it is offered calls that one.
   */
  const clouds: { column: TargetKind; alias: string; marker: string; calls: () => RecordedCall[]; thinkingBack: (followUp: RecordedCall) => void }[] = [
    {
      column: 'vertex',
      alias: ALIASES.vertexClaude,
      marker: VERTEX_CLAUDE_MARKER,
      calls: () => cg.vertex.calls.filter((call) => call.path.includes('/publishers/anthropic/')),
      thinkingBack(followUp) {
        const assistant = (followUp.body.messages as { role: string; content: any }[]).findLast((m) => m.role === 'assistant')!
        expect(assistant.content[0].type).toBe('thinking')
        expect(assistant.content[0].signature).toStartWith('fakesig_v_')
      },
    },
    {
      column: 'bedrock',
      alias: ALIASES.bedrock,
      marker: BEDROCK_MARKER,
      calls: () => cg.bedrock.accepted,
      thinkingBack(followUp) {
        expect(followUp.body.additionalModelRequestFields?.thinking?.type).toBe('enabled')
        const assistant = (followUp.body.messages as { role: string; content: any[] }[]).findLast((m) => m.role === 'assistant')!
        expect(assistant.content[0].reasoningContent?.reasoningText?.signature).toStartWith('sig-')
      },
    },
    {
      column: 'gemini',
      alias: ALIASES.gemini,
      marker: GEMINI_MARKER,
      calls: () => cg.gemini.generateCalls(),
      thinkingBack(followUp) {
        const model = (followUp.body.contents as { role: string; parts: any[] }[]).findLast((c) => c.role === 'model')!
        const call = model.parts.find((part) => part.functionCall)
        expect(cg.gemini.model.issued.has(call.thoughtSignature)).toBe(true)
      },
    },
    {
      column: 'azure',
      alias: ALIASES.azure,
      marker: AZURE_CHAT_MARKER,
      calls: () => cg.azure.calls,
      thinkingBack(followUp) {
        const assistant = (followUp.body.messages as { role: string; reasoning_content?: string; tool_calls?: { id: string }[] }[]).findLast(
          (m) => m.role === 'assistant',
        )!
        const called = cg.azure.chat.completions.findLast((c) =>
          c.choices[0].message.tool_calls?.some((t: { id: string }) => assistant.tool_calls?.some((a) => a.id === t.id)),
        )
        expect(assistant.reasoning_content).toBe(called.choices[0].message.reasoning_content)
      },
    },
  ]

  for (const { column, alias, marker, calls, thinkingBack } of clouds) {
    sideBySide(
      `${column} (${alias}): a prompt without tools completes and its answer is printed`,
      matrix.cell('prompt', column, async () => {
        const run = await claude(['-p', 'Say hello: chatgate-prompt-marker', '--model', alias, '--tools', ''], 'bearer')
        expectSuccess(run, marker)
        expect(sentBy(calls(), run).length).toBeGreaterThan(0)
      }),
    )

    sideBySide(
      `${column} (${alias}): a tool loop with thinking: the model calls Bash, Claude Code runs it, the call's thinking goes back with the result`,
      matrix.cell('tool-loop', column, async () => {
        const run = await claude(
          // `[[call:Bash]]`: the Bedrock and Gemini fakes call the tool it names (Claude Code offers a placeholder tool first).
          ['-p', 'Run the marker command and tell me what it printed [[call:Bash]]', '--model', alias, '--tools', 'Bash', '--allowedTools', ALLOWED],
          'bearer',
        )
        expectSuccess(run, marker, TOOL_OUTPUT)
        const followUp = sentBy(calls(), run).find((call) => call.text.includes(TOOL_OUTPUT))
        if (!followUp) throw new Error(`the tool's output never reached the upstream:\n${explain(run)}`)
        thinkingBack(followUp)
      }),
    )
  }

  for (const auth of auths) {
    sideBySide(`a wrong key as ${auth} is refused: the key is what lets Claude Code in`, async () => {
      const wrong: Record<string, string> = auth === 'bearer' ? { ANTHROPIC_AUTH_TOKEN: 'sk-cg-wrong' } : { ANTHROPIC_API_KEY: 'sk-cg-wrong' }
      const run = await claude(['-p', 'Say hello', '--model', ALIASES.mock, '--tools', ''], auth, wrong)
      expect(run.code).not.toBe(0)
      expect(run.stdout).not.toContain('Say hello')
    })
  }

  sideBySide(
    'what Claude Code sends reaches an Anthropic upstream as sent: the system-role message in place, cache_control, thinking, betas; only the model replaced',
    async () => {
      const run = await claude(['-p', 'Say hello', '--model', ALIASES.anthropic, '--tools', ''], 'bearer')
      expectSuccess(run, ANTHROPIC_MARKER)
      const call = sentBy(cg.anthropic.messageCalls(), run)[0]!
      const body = call.body
      expect(body.model).toBe('claude-sonnet-4-5')
      // The environment block: a role "system" message after the first user message, kept where it was.
      const systemAt = body.messages.findIndex((m: any) => m.role === 'system')
      expect(systemAt).toBeGreaterThan(0)
      expect(JSON.stringify(body.messages[systemAt].content)).toContain('# Environment')
      expect(body.system[0].text).toStartWith('x-anthropic-billing-header:')
      expect(call.text).toContain('"cache_control"')
      expect(body.thinking?.type).toBe('adaptive')
      expect(body.stream).toBe(true)
      expect(call.headers.get('anthropic-beta')).toContain('claude-code-20250219')
      expect(call.headers.get('x-api-key')).toBe('sk-ant-fake-upstream-key')
      // The page's CLAUDE_CODE_MAX_CONTEXT_TOKENS tells Claude Code the window an alias name cannot.
      expect(run.stderr).not.toContain("doesn't recognize the model")
    },
  )

  sideBySide(
    'what reaches an OpenAI-compatible upstream: the system message at its place, no attribution block, no cache_control, adaptive thinking as reasoning_effort',
    async () => {
      const run = await claude(['-p', 'Say hello', '--model', ALIASES.openai, '--tools', ''], 'bearer')
      expectSuccess(run, OPENAI_MARKER)
      const call = sentBy(cg.openai.chatCalls(), run)[0]!
      const messages = call.body.messages as { role: string; content: unknown }[]
      const roles = messages.map((m) => m.role)
      // Leading system (the top-level system), the user turn, then Claude Code's environment block in place.
      expect(roles[0]).toBe('system')
      const userAt = roles.indexOf('user')
      const envAt = messages.findIndex((m, i) => i > userAt && m.role === 'system' && JSON.stringify(m.content).includes('# Environment'))
      expect(envAt).toBeGreaterThan(userAt)
      expect(call.text).not.toContain('x-anthropic-billing-header')
      expect(call.text).not.toContain('cache_control')
      // Claude Code sends thinking {type: "adaptive"} with output_config.effort "high".
      expect(call.body.reasoning_effort).toBe('high')
    },
  )

  sideBySide('ToolSearch through an OpenAI-compatible upstream: its tool_reference result reaches the upstream as text, and the loop completes', async () => {
    const run = await claude(['-p', 'Find the web fetch tool [[call:ToolSearch]]', '--model', ALIASES.openai], 'bearer')
    expectSuccess(run, OPENAI_MARKER)
    const calls = sentBy(cg.openai.chatCalls(), run)
    const toolMessages = calls.flatMap((call) => (call.body.messages as { role: string; content: unknown }[]).filter((m) => m.role === 'tool'))
    expect(toolMessages.some((m) => JSON.stringify(m.content).includes('WebFetch'))).toBe(true)
    // A tool marked defer_loading is declared as an ordinary tool (the fake refuses unknown tool keys).
    expect(calls.every((call) => !call.text.includes('defer_loading'))).toBe(true)
  })

  sideBySide(
    'without a model setting Claude Code asks for a model name of its own, which the gateway refuses with model_not_found (as the page says)',
    async () => {
      const logged = cg.gateway.output().length
      const run = await claude(['-p', 'Say hello', '--tools', ''], 'bearer', { ANTHROPIC_MODEL: '' })
      expect(run.code).not.toBe(0)
      // What the page's troubleshooting quotes, and the gateway's reason in its request log.
      expect(run.stdout + run.stderr).toContain("There's an issue with the selected model (claude-")
      await waitFor(() => cg.gateway.output().slice(logged).includes('"error_code":"model_not_found"'), "the gateway's request log line with model_not_found")
    },
  )

  sideBySide('model discovery (CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY=1): Claude Code reads the aliases from GET /v1/models', async () => {
    const discovery = pageEnv('discovery', cg.url, cg.key)
    const run = await claude(['-p', 'Say hello', '--model', ALIASES.mock, '--tools', ''], 'bearer', discovery)
    expectSuccess(run, 'Say hello')
    const cache = join(run.home, '.claude', 'cache', 'gateway-models.json')
    if (!existsSync(cache)) throw new Error(`Claude Code kept no model list (${cache}):\n${explain(run)}`)
    const ids = (JSON.parse(readFileSync(cache, 'utf8')) as { models: { id: string }[] }).models.map((m) => m.id)
    expect(ids).toEqual(expect.arrayContaining([ALIASES.anthropic, ALIASES.anthropicFast, ALIASES.openai]))
  })

  sideBySide("the page's examples run as written (the docs' own command lines)", async () => {
    for (const tag of ['examples', 'mock']) {
      for (const line of docBlock(PAGE, 'sh', tag)
        .split('\n')
        .filter((l) => l.startsWith('claude '))) {
        const home = mkdtempSync(join(tmpdir(), 'chatgate-claude-home-'))
        homes.push(home)
        const [stdout, stderr, code] = await slot(() => {
          const proc = Bun.spawn(['bash', '-c', line], {
            cwd: home,
            env: { PATH: `${dirname(binary)}:${process.env.PATH ?? '/usr/bin:/bin'}`, HOME: home, ...pageEnv('env', cg.url, cg.key), ...testGuards(trap.url) },
            stdin: 'ignore',
            stdout: 'pipe',
            stderr: 'pipe',
            timeout: 20_000,
          })
          return Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
        })
        if (code !== 0 || stdout.trim() === '' || stdout.includes('API Error')) {
          throw new Error(`the docs' command failed: ${line}\n${explain({ code, stdout, stderr, home })}`)
        }
      }
    }
  })

  test("with the page's settings (and the test's guards), Claude Code connected to nothing but the gateway: no phoning home", () => {
    expect(trap.attempts).toEqual([])
  })

  matrixCheck()
})
