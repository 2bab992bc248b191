import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir, writeConfig } from './support/gateway'
import { TEST_MS } from './support/hooks'
import { spawnGateway, startRefused } from './support/process'

setDefaultTimeout(TEST_MS)

/**
 * The entry point (src/main.ts) reads `[http] max_upstream_connections` alone from the config file
 * and replaces the process with the runtime's fetch cap raised before it loads the gateway. That
 * early read must take the operator's value (not only the default), and must not hide a broken file:
 * the full validation that follows still refuses it, naming the fault.
 */
const BOUND = 1500

const config = `
[http]
max_upstream_connections = ${BOUND}

[tiers.standard]
requests_per_minute = 100
tokens_per_minute = 100000
max_concurrent = 10

[upstreams.local]
kind = "mock"

[aliases."local/echo"]
targets = [ { upstream = "local", model = "echo" } ]
`

/** The process's environment as the kernel holds it: after an execve, the new one. */
const environOf = (pid: number): Map<string, string> =>
  new Map(
    readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .filter((entry) => entry.includes('='))
      .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)] as [string, string]),
  )

describe('the fetch cap, decided from the config file before the gateway loads', () => {
  test('the configured bound sets the cap: the bound + 256, on the same process', async () => {
    using dir = tempDir()
    const gw = await spawnGateway({ GATEWAY_DB: join(dir.path, 'gw.sqlite'), GATEWAY_CONFIG: writeConfig(dir.path, config) }, { presetFetchCap: false })
    try {
      const environ = environOf(gw.proc.pid)
      expect(environ.get('BUN_CONFIG_MAX_HTTP_REQUESTS')).toBe(String(BOUND + 256))
      expect(environ.get('CHATGATE_FETCH_CAP_SET')).toBe('1')
      expect(gw.output()).toContain(`"max_upstream_connections":${BOUND}`)
    } finally {
      await gw.stop()
    }
  })

  test('a file the early read cannot parse is still refused at start, naming the fault', async () => {
    using dir = tempDir()
    const { code, stderr } = await startRefused({ GATEWAY_DB: join(dir.path, 'gw.sqlite'), GATEWAY_CONFIG: writeConfig(dir.path, `${config}\n[http\n`) })
    expect(code).toBe(1)
    expect(stderr).toContain('(syntax)')
  })
})
