/**
 * The request log survives SIGKILL under load: every request a client got an answer for (a JSON
 * answer, a stream read to its end, a refusal) has its record after the restart, and no request has
 * two. (On one process the records are all there at the first read; waiting changes nothing there.) On one process with SQLite (its journal, folded by the next process), and on a cluster
 * (Redis's stream for served requests, each instance's local journal for refusals).
 */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { startCluster } from '../support/cluster'
import { tempDir, writeConfig } from '../support/gateway'
import { TEST_MS } from '../support/hooks'
import { type GatewayProcess, spawnGateway } from '../support/process'
import { describeWithServers } from '../support/servers'
import { waitFor } from '../support/wait'
import { ADMIN_KEY, createKey, everyRecord, MOCK, TIERS } from './support'

setDefaultTimeout(TEST_MS)

interface Load {
  /** Request ids whose answer the client read to its end. */
  answered: Set<string>
  /** Sent to a killed instance and never answered: each may have a record or not, never two. */
  cut: Set<string>
  stop(): Promise<void>
}

/** What each worker sends in turn: a JSON request, a stream, and a refusal (a malformed body, refused before serving). */
async function send(url: string, key: string, id: string, kind: number): Promise<void> {
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-request-id': id }
  const messages = [{ role: 'user', content: `load ${id}` }]
  if (kind === 0) {
    const response = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers, body: JSON.stringify({ model: 'local/echo', messages }) })
    if (response.status !== 200 || !(await response.text()).includes('"finish_reason"')) throw new Error(`JSON answer ${response.status}`)
  } else if (kind === 1) {
    const body = JSON.stringify({ model: 'local/echo', stream: true, messages })
    const response = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers, body })
    if (!(await response.text()).endsWith('data: [DONE]\n\n')) throw new Error('a stream cut short')
  } else {
    const response = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers, body: '{"model":' })
    if (response.status !== 400 || !(await response.text()).includes('invalid_request_error')) throw new Error(`refusal ${response.status}`)
  }
}

/** `workers` clients sending to the live instances in turn until stopped; a failure is allowed only from a killed one. */
function load(instances: () => GatewayProcess[], killed: ReadonlySet<GatewayProcess>, key: string, workers = 8): Load {
  const answered = new Set<string>()
  const cut = new Set<string>()
  let running = true
  let n = 0
  const done = Promise.all(
    Array.from({ length: workers }, async (_, worker) => {
      for (let turn = 0; running; turn++) {
        const live = instances()
        const instance = live[(worker + turn) % live.length]!
        const id = `load-${n++}`
        try {
          await send(instance.url, key, id, turn % 3)
          answered.add(id)
        } catch (error) {
          if (!killed.has(instance)) throw error
          cut.add(id)
        }
      }
    }),
  )
  return {
    answered,
    cut,
    async stop() {
      running = false
      await done
    },
  }
}

/** How many records each load request has. */
async function recordCounts(url: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>()
  for (const r of await everyRecord(url, 'since=0')) if (r.id.startsWith('load-')) counts.set(r.id, (counts.get(r.id) ?? 0) + 1)
  return counts
}

/**
 * Every answered request has exactly one record; a cut one at most one; nothing else is there. On a
 * cluster another live instance's records show within a second (it folds its journal), so the
 * check waits until none is missing.
 */
async function expectEveryAnswerOnce(url: string, run: Load): Promise<void> {
  let missing: string[] = []
  const counts = await waitFor(
    async () => {
      const counts = await recordCounts(url)
      missing = [...run.answered].filter((id) => !counts.has(id))
      return missing.length === 0 && counts
    },
    () => `every answered request's record; still missing ${missing.length}: ${missing.slice(0, 10).join(', ')}`,
  )
  const twice = [...counts].filter(([, count]) => count > 1)
  const unknown = [...counts.keys()].filter((id) => !run.answered.has(id) && !run.cut.has(id))
  console.log(`answered ${run.answered.size}, cut ${run.cut.size}, records ${counts.size}`)
  expect({ twice, unknown }).toEqual({ twice: [], unknown: [] })
}

const CONFIG = `${TIERS}${MOCK}`

test('SQLite: SIGKILL under load; the next process finds every answered request once', async () => {
  using dir = tempDir()
  const env = { GATEWAY_DB: join(dir.path, 'gateway.sqlite'), GATEWAY_CONFIG: writeConfig(dir.path, CONFIG), GATEWAY_ADMIN_KEY: ADMIN_KEY }
  const first = await spawnGateway(env)
  const { key } = await createKey(first.url, 'open')
  const killed = new Set<GatewayProcess>()
  const run = load(() => [first], killed, key)
  let second: GatewayProcess | null = null
  try {
    await waitFor(() => run.answered.size >= 600, 'at least 600 answered requests')
    killed.add(first)
    await first.stop('SIGKILL')
    await run.stop()
    second = await spawnGateway(env)
    await expectEveryAnswerOnce(second.url, run)
  } finally {
    await run.stop()
    await second?.stop()
  }
})

describeWithServers('a cluster', ['redis', 'postgres'], () => {
  test('SIGKILL one of two instances under load; every answered request is found once', async () => {
    const cluster = await startCluster(CONFIG)
    try {
      const instances = await cluster.start(2, { GATEWAY_ADMIN_KEY: ADMIN_KEY })
      const { key } = await createKey(instances[0]!.url, 'open')
      const killed = new Set<GatewayProcess>()
      const live = () => instances.filter((g) => !killed.has(g))
      const run = load(live, killed, key)
      try {
        await waitFor(() => run.answered.size >= 600, 'at least 600 answered requests')
        killed.add(instances[1]!)
        await instances[1]!.stop('SIGKILL')
        const after = run.answered.size + 300
        await waitFor(() => run.answered.size >= after, 'answers after the kill')
      } finally {
        await run.stop()
      }
      // A process started on the killed one's data directory folds its local journal (its refusals).
      const replacement = (await cluster.start(1, { GATEWAY_ADMIN_KEY: ADMIN_KEY }))[0]!
      await expectEveryAnswerOnce(replacement.url, run)
    } finally {
      await cluster.dispose()
    }
  })
})
