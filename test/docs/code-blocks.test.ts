/**
 * Every fenced code block of README.md and of docs/**\/*.md stays valid, by its language:
 *
 * - `toml` parses; a whole config (tiers, upstreams and aliases) passes the gateway's own parser
 *   (`parseGatewayConfig` with this build's provider kinds), and a fragment passes it laid over the
 *   built-in defaults, as it would be added to a config file;
 * - `json` parses;
 * - `ts` and `js` typecheck (strict) against the installed packages, all in one tsc run; the `ts`
 *   blocks of docs/clients/*.md are left to test/clients/docs.test.ts, which already checks them;
 * - `sh` and `bash` pass `bash -n`;
 * - the README's test command is the one CI runs, and its five-minute tour runs: its `curl` calls
 *   answer 200 and its SDK examples (with those of docs/clients/openai-sdk.md) exit 0, against a
 *   gateway spawned on the built-in defaults, with its first key.
 *
 * Output, protocols and other programs' files (no language, `text`, `http`, `nginx`, `haproxy`,
 * `mermaid`) are shown as they are; any other language fails until this test knows it. A block that
 * is partial on purpose carries `<!-- not-checked: reason -->` on the line before its fence.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { generateKeyPairSync } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { DEFAULT_CONFIG } from '../../src/config/defaults'
import { parseGatewayConfig } from '../../src/config/load'
import { providerKinds } from '../../src/providers'
import { DOCS_GATEWAY_URL, runSnippet } from '../clients/harness'
import { ROOT, tempDir } from '../support/gateway'
import { setup, teardown, TEST_MS } from '../support/hooks'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { type CodeBlock, codeBlocks, docPages, where } from './markdown'

setDefaultTimeout(TEST_MS)

const BLOCKS = docPages().flatMap((page) => codeBlocks(page))
const CHECKED = BLOCKS.filter((block) => block.notChecked === null)
const inLanguage = (...langs: string[]) => CHECKED.filter((block) => langs.includes(block.lang))

/** Languages this test checks. */
const CHECKED_LANGUAGES = new Set(['toml', 'json', 'ts', 'js', 'sh', 'bash'])
/** Shown as they are: output, HTTP exchanges, other programs' configs, drawings. */
const SHOWN_LANGUAGES = new Set(['', 'text', 'http', 'nginx', 'haproxy', 'mermaid'])

/** The section of the README whose examples run, and the client page whose examples run with them. */
const TOUR = 'Five-minute tour'
const RUN_PAGES = new Set(['docs/clients/openai-sdk.md'])

/** Runs a command to its end; its exit code and output. */
async function run(cmd: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string }> {
  const proc = Bun.spawn(cmd, { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env }, stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, out: stdout + stderr }
}

/**
 * The environment a pasted config would start in: every variable a block names in a `*_env` field is
 * set (a placeholder secret; for `credentials_file_env`, the path of a generated service-account file).
 */
function variablesFor(code: string, serviceAccountPath: string): Record<string, string> {
  const vars: Record<string, string> = {}
  for (const [, field, name] of code.matchAll(/^\s*(\w+_env)\s*=\s*"([^"]+)"/gm)) {
    vars[name!] = field === 'credentials_file_env' ? serviceAccountPath : `placeholder-secret-for-${name}`
  }
  return vars
}

/** A service-account file as Google issues them, with a freshly generated key. */
function serviceAccountFile(dir: string): string {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const path = join(dir, 'service-account.json')
  const account = {
    type: 'service_account',
    project_id: 'docs-project',
    private_key_id: 'docs-key',
    private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    client_email: 'gateway@docs-project.iam.gserviceaccount.com',
    token_uri: 'https://oauth2.googleapis.com/token',
  }
  writeFileSync(path, JSON.stringify(account))
  return path
}

const isTable = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** A fragment as it would be added to a config file: its tables' entries replace the built-in defaults' of the same name. */
function overDefaults(fragment: Record<string, unknown>): Record<string, unknown> {
  const config: Record<string, unknown> = structuredClone(DEFAULT_CONFIG)
  for (const [section, value] of Object.entries(fragment)) {
    const base = config[section]
    config[section] = isTable(value) && isTable(base) ? { ...base, ...value } : value
  }
  return config
}

describe('the code blocks of the README and docs/', () => {
  test('each has a language this test checks or shows as is, and each exemption gives its reason', () => {
    expect(BLOCKS.length).toBeGreaterThan(20)
    const problems = [
      ...BLOCKS.filter((block) => !CHECKED_LANGUAGES.has(block.lang) && !SHOWN_LANGUAGES.has(block.lang)).map(
        (block) => `${where(block)}: \`\`\`${block.lang} is a language this test neither checks nor shows as is`,
      ),
      ...BLOCKS.filter((block) => block.notChecked === '').map((block) => `${where(block)}: not-checked without a reason`),
    ]
    expect(problems).toEqual([])
  })

  test("toml: parses; a whole config passes the gateway's own parser, a fragment passes it over the built-in defaults", () => {
    const blocks = inLanguage('toml')
    expect(blocks.length).toBeGreaterThan(0)
    const failures: string[] = []
    using dir = tempDir('chatgate-docs-toml-')
    const serviceAccount = serviceAccountFile(dir.path)
    for (const block of blocks) {
      try {
        const parsed = Bun.TOML.parse(block.code) as Record<string, unknown>
        const whole = ['tiers', 'upstreams', 'aliases'].every((section) => section in parsed)
        const config = whole ? parsed : overDefaults(parsed)
        parseGatewayConfig(config, where(block), providerKinds, JSON.stringify(config), variablesFor(block.code, serviceAccount))
      } catch (error) {
        failures.push(`${where(block)}: ${(error as Error).message}`)
      }
    }
    expect(failures).toEqual([])
  })

  test('json: parses', () => {
    const blocks = inLanguage('json')
    expect(blocks.length).toBeGreaterThan(0)
    const failures: string[] = []
    for (const block of blocks) {
      try {
        JSON.parse(block.code)
      } catch (error) {
        failures.push(`${where(block)}: ${(error as Error).message}`)
      }
    }
    expect(failures).toEqual([])
  })

  test('sh and bash: bash -n', async () => {
    const blocks = inLanguage('sh', 'bash')
    expect(blocks.length).toBeGreaterThan(0)
    const results = await Promise.all(blocks.map(async (block) => ({ block, ...(await run(['bash', '-n', '-c', block.code])) })))
    expect(results.filter((r) => r.code !== 0).map((r) => `${where(r.block)}: ${r.out.trim()}`)).toEqual([])
  })

  test('ts and js: typecheck (strict) against the installed packages', async () => {
    // The client pages' TypeScript is test/clients/docs.test.ts's.
    const blocks = CHECKED.filter((block) => block.lang === 'js' || (block.lang === 'ts' && !block.page.startsWith('docs/clients/')))
    expect(blocks.length).toBeGreaterThan(1)
    // Under node_modules, so that the blocks' imports resolve to the project's packages as in a user's project.
    const cache = join(ROOT, 'node_modules', '.cache')
    mkdirSync(cache, { recursive: true })
    const dir = mkdtempSync(join(cache, 'chatgate-doc-blocks-'))
    try {
      const files = new Map<string, CodeBlock>()
      for (const block of blocks) {
        const name = `${block.page.replace(/[^A-Za-z0-9]+/g, '_')}_${block.line}.${block.lang}`
        files.set(name, block)
        // A module of its own, as a file of a user's project: top-level await, and no names shared with the other blocks.
        writeFileSync(join(dir, name), `${block.code}export {}\n`)
      }
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ESNext',
            module: 'Preserve',
            moduleResolution: 'bundler',
            lib: ['ESNext'],
            types: ['bun'],
            strict: true,
            noEmit: true,
            skipLibCheck: true,
            allowJs: true,
            checkJs: true,
          },
          include: ['*.ts', '*.js'],
        }),
      )
      const { code, out } = await run(['bun', join(ROOT, 'node_modules', '.bin', 'tsc'), '-p', dir, '--pretty', 'false'])
      // Each error at the line of the page it comes from.
      const located = out.replace(/^(\S+?)\((\d+),(\d+)\)/gm, (whole, file: string, line: string) => {
        const block = files.get(file.split('/').pop()!)
        return block ? `${block.page}:${block.line + Number(line)}` : whole
      })
      if (code !== 0) throw new Error(`code blocks that do not typecheck:\n${located}`)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("the README's commands and five-minute tour", () => {
  const readme = codeBlocks('README.md')
  const tour = readme.filter((block) => block.section === TOUR && block.notChecked === null)
  let gateway: GatewayProcess | undefined
  let dir: ReturnType<typeof tempDir> | undefined

  setup(async () => {
    dir = tempDir('chatgate-docs-')
    gateway = await spawnGateway({ GATEWAY_DB: join(dir.path, 'gateway.sqlite') }, { expectFirstKey: true })
  })
  teardown(async () => {
    await gateway?.stop()
    dir?.[Symbol.dispose]()
  })

  test('the test command is the one CI runs', () => {
    const commands = readme.filter((block) => block.lang === 'sh').flatMap((block) => block.code.split('\n'))
    const testCommand = commands.find((line) => line.endsWith('bun run test'))
    expect(testCommand).toBeDefined()
    expect(commands.some((line) => line.endsWith('bun run start'))).toBe(true)
    expect(readFileSync(join(ROOT, '.ci', 'run'), 'utf8')).toContain(testCommand!)
  })

  test('its curl calls answer 200', async () => {
    const blocks = tour.filter((block) => block.lang === 'sh' && /^\s*curl\s/m.test(block.code))
    expect(blocks.length).toBeGreaterThan(0)
    const url = gateway!.url.replace(/\/$/, '')
    // Each call reports its status after its body; `set -e` stops at a call that could not connect.
    const prelude = `curl() { command curl --max-time 30 -w '\\n[[status %{http_code}]]\\n' "$@"; }\n`
    for (const block of blocks) {
      const calls = block.code.split('\n').filter((line) => /^\s*curl\s/.test(line)).length
      const { code, out } = await run(['bash', '-euo', 'pipefail', '-c', prelude + block.code.replaceAll(DOCS_GATEWAY_URL, url)], {
        CHATGATE_KEY: gateway!.firstKey!,
      })
      const statuses = [...out.matchAll(/\[\[status (\d{3})\]\]/g)].map((match) => match[1])
      if (code !== 0 || statuses.length !== calls || statuses.some((status) => status !== '200')) {
        throw new Error(`${where(block)}: exit ${code}, statuses ${statuses.join(', ')} (${calls} calls):\n${out}`)
      }
    }
  })

  test('its SDK examples, and those of docs/clients/openai-sdk.md, run', async () => {
    const blocks = [...tour.filter((block) => block.lang === 'ts'), ...CHECKED.filter((block) => block.lang === 'ts' && RUN_PAGES.has(block.page))]
    expect(blocks.filter((block) => block.page === 'README.md').length).toBeGreaterThan(1)
    const url = gateway!.url.replace(/\/$/, '')
    // One at a time: the first key's tier ("free") allows 4 requests at once.
    for (const block of blocks) {
      const result = await runSnippet(block.code, url, gateway!.firstKey!)
      if (result.code !== 0) throw new Error(`${where(block)}: exit ${result.code}:\n${result.stdout}${result.stderr}`)
    }
  })
})
