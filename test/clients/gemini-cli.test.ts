/**
 * Gemini CLI itself (`@google/gemini-cli`, pinned in package.json), run headless (`gemini -p`) with
 * the settings of docs/clients/gemini-cli.md (its `settings.json` in a throwaway HOME,
 * `GOOGLE_GEMINI_BASE_URL` pointing at the gateway, `GEMINI_API_KEY` a gateway key), through a tool
 * loop to its final answer (the model asks to read a file, Gemini CLI reads it, sends the contents
 * back, prints the model's answer), on the mock (its `[[tool:...]]` directive), a gemini-kind alias
 * (the body passed through) and an Anthropic alias (translated); and what it sends, recorded.
 *
 * The gateway is the real-client tests' (test/clients/harness.ts: a gateway process in front of fake
 * Anthropic and OpenAI-compatible upstreams and the mock) with a fake Gemini API behind one more alias
 * (test/gemini-inbound/clients.ts). Gemini CLI talks to it through a recording TCP tap (test/clients/tap.ts).
 *
 * Nothing leaves 127.0.0.1: Gemini CLI is a Node program, run with a trap preloaded
 * (test/gemini-inbound/net-trap.cjs, through NODE_OPTIONS, so the child process it relaunches itself
 * as loads it too) that records and refuses every connection and DNS lookup that is not loopback; the
 * last test asserts there was none. Without the page's privacy settings Gemini CLI 0.61.0 sends usage
 * statistics to play.googleapis.com:443 on every run. Each run takes a few seconds, most of them
 * Gemini CLI starting; they run one after the other.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { ANTHROPIC_MARKER } from '../support/fakes/anthropic'
import { GEMINI_MARKER } from '../support/fakes/gemini'
import { ROOT } from '../support/gateway'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { limit } from '../support/limit'
import { GEMINI_ALIAS, type GeminiClientsGateway, startGeminiClientsGateway } from '../gemini-inbound/clients'
import { ALIASES, docBlock, docPage, DOCS_GATEWAY_URL, GEMINI_API_TARGETS, NO_RESPONSES_REQUESTS, toolInputEverywhere } from './harness'
import { clientMatrix, matrixCheck } from './matrix'
import { type Tap, tcpTap } from './tap'

setDefaultTimeout(TEST_MS)

const GEMINI_CLI_VERSION = '0.61.0'
const MARKER_FILE = 'marker.txt'
const TOOL_OUTPUT = 'chatgate-tool-ran'
const PAGE = docPage('gemini-cli.md')
const NET_TRAP = join(ROOT, 'test', 'gemini-inbound', 'net-trap.cjs')
/** One run of Gemini CLI at most (a safety net: a run takes seconds, most of them Gemini CLI starting); a test's bound is this per run. */
const RUN_MS = 60_000

/** The CLI's entry point, as its `bin` names it. */
function geminiEntry(): string {
  const pkg = createRequire(join(ROOT, 'package.json')).resolve('@google/gemini-cli/package.json')
  const bin = (JSON.parse(readFileSync(pkg, 'utf8')) as { bin: { gemini: string } }).bin.gemini
  return join(dirname(pkg), bin)
}

/** The `export NAME=VALUE` lines of the page's env block, with the gateway's URL and key in place. */
function pageEnv(url: string, key: string): Record<string, string> {
  const env: Record<string, string> = {}
  for (const line of docBlock(PAGE, 'sh', 'env').split('\n')) {
    const match = /^export ([A-Z0-9_]+)=(\S+)/.exec(line)
    if (match) env[match[1]!] = match[2]!.replace(DOCS_GATEWAY_URL, url).replace('$CHATGATE_KEY', key)
  }
  return env
}

/**
 * Guards of the test only, not settings a user needs: only the read_file tool (so a fake that calls
 * the first tool it is offered calls that one); below, the working directory trusted (a user's own
 * project is, once Gemini CLI asked), no relaunch of itself as a child process (a second start, only
 * to raise its heap limit), and the trap.
 */
const GUARD_SETTINGS = { tools: { core: ['read_file'] } }

const matrix = clientMatrix({
  id: 'gemini-cli',
  order: 70,
  name: `Gemini CLI ${GEMINI_CLI_VERSION} (the Gemini API)`,
  page: 'clients/gemini-cli.md',
  test: 'test/clients/gemini-cli.test.ts',
  rows: [{ id: 'tool-loop', label: '`gemini -p`: a tool loop (`read_file`) to the final answer, streamed, thinking on' }],
  notApplicable: [NO_RESPONSES_REQUESTS],
})

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

describe(`Gemini CLI ${GEMINI_CLI_VERSION}, headless (gemini -p), through the gateway`, () => {
  let gg: GeminiClientsGateway
  let tap: Tap
  const dirs: string[] = []
  const trapFile = join(mkdtempSync(join(tmpdir(), 'chatgate-gemini-trap-')), 'attempts.txt')
  const entry = geminiEntry()
  const toolInput = (name: string) => (name === 'read_file' ? { file_path: MARKER_FILE } : {})

  setup(async () => {
    gg = await startGeminiClientsGateway(toolInputEverywhere(toolInput))
    tap = tcpTap(gg.url)
  })
  teardown(async () => {
    tap?.stop()
    await gg?.stop()
    for (const dir of [...dirs, dirname(trapFile)]) rmSync(dir, { recursive: true, force: true })
  })

  /** `gemini <args>` with the page's settings in a throwaway HOME, in a working directory holding the marker file. */
  async function gemini(args: string[], key = gg.key, extraSettings: Record<string, unknown> = {}): Promise<Run> {
    {
      const home = mkdtempSync(join(tmpdir(), 'chatgate-gemini-home-'))
      const work = mkdtempSync(join(tmpdir(), 'chatgate-gemini-work-'))
      dirs.push(home, work)
      mkdirSync(join(home, '.gemini'))
      const settings = { ...(JSON.parse(docBlock(PAGE, 'json', 'settings')) as Record<string, unknown>), ...GUARD_SETTINGS, ...extraSettings }
      writeFileSync(join(home, '.gemini', 'settings.json'), JSON.stringify(settings, null, 2))
      writeFileSync(join(work, MARKER_FILE), `${TOOL_OUTPUT}\n`)
      const proc = Bun.spawn(['node', entry, ...args], {
        cwd: work,
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: home,
          // Gemini CLI writes its error reports to the temporary directory: the run's own.
          TMPDIR: work,
          ...pageEnv(tap.url, key),
          GEMINI_CLI_TRUST_WORKSPACE: 'true',
          GEMINI_CLI_NO_RELAUNCH: 'true',
          NODE_OPTIONS: `--require ${NET_TRAP}`,
          CHATGATE_NET_TRAP: trapFile,
        },
        stdin: 'ignore',
        stdout: 'pipe',
        stderr: 'pipe',
        // A safety net below the test's own bound, so a hang fails with Gemini CLI's output.
        timeout: RUN_MS - 5_000,
      })
      const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
      return { code, stdout, stderr }
    }
  }

  const explain = (run: Run) =>
    `exit ${run.code}\n--- stdout\n${run.stdout.slice(-3000)}\n--- stderr\n${run.stderr.slice(-3000)}\n--- gateway log (tail)\n${gg.gateway.output().slice(-3000)}`

  function expectAnswer(run: Run, ...needles: string[]) {
    if (run.code === 0 && needles.every((needle) => run.stdout.includes(needle))) return
    throw new Error(`gemini -p did not print ${needles.map((n) => JSON.stringify(n)).join(' and ')}\n${explain(run)}`)
  }

  /** The generate requests Gemini CLI sent for a model, parsed, as the tap recorded them. */
  const sentFor = (alias: string) =>
    tap.requests.filter((r) => r.method === 'POST' && r.path.startsWith(`/v1beta/models/${alias}:`)).map((r) => ({ ...r, json: JSON.parse(r.body.toString()) }))

  /** The requests of the mock's tool loop: the one that asks for the call, and the one that answers it. */
  const loopRequests = () => sentFor(ALIASES.mock).filter((r) => r.body.toString().includes('[[tool:read_file'))

  test(
    'the pinned version runs here (gemini --version)',
    async () => {
      const run = await gemini(['--version'])
      expect(run.stdout.trim()).toBe(GEMINI_CLI_VERSION)
    },
    RUN_MS,
  )

  test(
    'the mock (local/echo): a prompt, and a tool loop driven by a [[tool:...]] directive',
    matrix.cell('tool-loop', 'mock', async () => {
      const prompt = await gemini(['-p', 'Say hello: chatgate-prompt-marker', '-m', ALIASES.mock])
      expectAnswer(prompt, 'chatgate-prompt-marker')
      const loop = await gemini(['-p', `[[tool:read_file {"file_path":"${MARKER_FILE}"}]] chatgate-mock-final`, '-m', ALIASES.mock])
      expectAnswer(loop, 'chatgate-mock-final')
      const followUp = loopRequests()[1]!
      const response = followUp.json.contents.at(-1).parts[0].functionResponse
      expect(response).toMatchObject({ id: 'call_mock_1', name: 'read_file', response: { output: `${TOOL_OUTPUT}\n` } })
    }),
    2 * RUN_MS,
  )

  test(
    `a Gemini alias (${GEMINI_ALIAS}, passed through): a tool loop; the upstream got Gemini CLI's bodies byte for byte, signatures included`,
    matrix.cell('tool-loop', 'gemini', async () => {
      const sent = gg.gemini.generateCalls().length
      const run = await gemini(['-p', 'What does marker.txt say?', '-m', GEMINI_ALIAS])
      expectAnswer(run, GEMINI_MARKER, TOOL_OUTPUT)
      const calls = gg.gemini.generateCalls().slice(sent)
      expect(calls.length).toBe(2)
      for (const call of calls) expect(tap.requests.some((r) => r.body.toString() === call.text)).toBe(true)
      // The signature the fake gave its call came back on it (the fake refuses the turn otherwise).
      expect(gg.gemini.model.returned.size).toBeGreaterThan(0)
    }),
    RUN_MS,
  )

  test(
    `an Anthropic alias (${ALIASES.anthropic}, translated), thinking by the page's preset: a tool loop; the signed thinking made the round trip`,
    matrix.cell('tool-loop', 'anthropic', async () => {
      const sent = gg.anthropic.messageCalls().length
      const thinking = JSON.parse(docBlock(PAGE, 'json', 'thinking')) as Record<string, unknown>
      const run = await gemini(['-p', '[[call:read_file]] What does marker.txt say?', '-m', ALIASES.anthropic], gg.key, thinking)
      expectAnswer(run, ANTHROPIC_MARKER, `(the tool said: ${TOOL_OUTPUT}`)
      const [first, followUp] = gg.anthropic
        .messageCalls()
        .slice(sent)
        .map((c) => c.body)
      expect(first.tools.map((t: { name: string }) => t.name)).toContain('read_file')
      expect(first.system).toBeDefined()
      expect(first.thinking).toEqual({ type: 'enabled', budget_tokens: 4096 })
      // Gemini CLI sent back the call's thoughtSignature (the gateway's seal): the thinking the fake signed came back first in the turn.
      const assistant = followUp.messages.at(-2)
      expect(assistant.content.map((b: { type: string }) => b.type)).toEqual(['thinking', 'tool_use'])
      expect(assistant.content[0].signature).toStartWith('fakesig_a_')
      expect(followUp.messages.at(-1).content[0]).toMatchObject({ type: 'tool_result', content: `${TOOL_OUTPUT}\n` })
    }),
    RUN_MS,
  )

  // The other kinds, with the page's thinking preset: Claude on Bedrock refuses a tool turn sent back without its signed thinking.
  // Side by side, two at a time: each run is mostly Gemini CLI starting, one core's work.
  const twoAtATime = limit(2)
  for (const { kind, alias, marker } of GEMINI_API_TARGETS.filter((t) => !['mock', 'gemini', 'anthropic'].includes(t.kind))) {
    test.concurrent(
      `${kind} (${alias}): a tool loop to the final answer`,
      matrix.cell('tool-loop', kind, async () => {
        const thinking = JSON.parse(docBlock(PAGE, 'json', 'thinking')) as Record<string, unknown>
        const run = await twoAtATime(() => gemini(['-p', '[[call:read_file]] What does marker.txt say?', '-m', alias], gg.key, thinking))
        expectAnswer(run, marker!, TOOL_OUTPUT)
      }),
      2 * RUN_MS,
    )
  }

  test(
    "a wrong key and an unknown model: the errors the page's troubleshooting quotes",
    async () => {
      const wrongKey = await gemini(['-p', 'Say hello', '-m', ALIASES.mock], 'sk-cg-wrong')
      expect(wrongKey.code).not.toBe(0)
      const unknown = await gemini(['-p', 'Say hello', '-m', 'nope/nope'])
      expect(unknown.code).not.toBe(0)
      for (const [run, quoted] of [
        [wrongKey, '_ApiError: {"error":{"code":401,"message":"Unauthorized","status":"UNAUTHENTICATED"'],
        [unknown, 'ModelNotFoundError: The model "nope/nope" does not exist. GET /v1/models lists the available models.'],
      ] as const) {
        if (!run.stderr.includes(quoted)) throw new Error(`expected ${quoted} in the output\n${explain(run)}`)
      }
      expect(PAGE).toContain('_ApiError: {"error":{"code":401,"message":"Unauthorized","status":"UNAUTHENTICATED"')
      expect(PAGE).toContain('ModelNotFoundError: The model "x" does not exist. GET /v1/models lists the available models.')
    },
    2 * RUN_MS,
  )

  test(
    "the page's command lines run as written (against the gateway, with the page's settings)",
    async () => {
      const lines = docBlock(PAGE, 'sh', 'run')
        .split('\n')
        .filter((line) => line.startsWith('gemini '))
      expect(lines.length).toBeGreaterThan(0)
      for (const line of lines) {
        const args = [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!).slice(1)
        const run = await gemini(args)
        if (run.code !== 0 || run.stdout.trim() === '') throw new Error(`the page's command failed: ${line}\n${explain(run)}`)
      }
    },
    2 * RUN_MS,
  )

  test('what Gemini CLI sends (recorded at the tap), as docs/clients/gemini-cli.md says', () => {
    const [first, second] = loopRequests()
    expect(first!.path).toBe(`/v1beta/models/${ALIASES.mock}:streamGenerateContent?alt=sse`)
    expect(first!.headers['x-goog-api-key']).toBe(gg.key)
    expect(first!.headers.authorization).toBeUndefined()
    expect(first!.headers['user-agent']).toStartWith(`GeminiCLI-tui/${GEMINI_CLI_VERSION}/${ALIASES.mock} (`)
    expect(first!.headers['x-goog-api-client']).toStartWith('google-genai-sdk/')
    const body = first!.json
    expect(Object.keys(body).sort()).toEqual(['contents', 'generationConfig', 'systemInstruction', 'tools'])
    expect(body.generationConfig).toEqual({ temperature: 1, topP: 0.95, topK: 64, thinkingConfig: { includeThoughts: true } })
    expect(body.contents[0].role).toBe('user')
    expect(body.contents[0].parts[0].text).toStartWith('<session_context>')
    const declarations = body.tools.flatMap((t: { functionDeclarations: { name: string; parametersJsonSchema?: unknown }[] }) => t.functionDeclarations)
    expect(declarations.every((d: { parametersJsonSchema?: unknown }) => d.parametersJsonSchema !== undefined)).toBe(true)
    // The next turn: the model's call back with a signature (Gemini CLI's stand-in when it had none), the answer with the call's id.
    const [model, user] = second!.json.contents.slice(-2)
    expect(model.parts[0]).toMatchObject({ functionCall: { id: 'call_mock_1', name: 'read_file' }, thoughtSignature: 'skip_thought_signature_validator' })
    expect(user.parts[0].functionResponse).toMatchObject({ id: 'call_mock_1', name: 'read_file' })
  })

  test('with the settings of the page, Gemini CLI connected to nothing but the gateway: no phoning home', () => {
    const attempts = existsSync(trapFile) ? readFileSync(trapFile, 'utf8').trim().split('\n').filter(Boolean) : []
    expect(attempts).toEqual([])
  })

  matrixCheck()
})
