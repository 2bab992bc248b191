import { expect, setDefaultTimeout, test } from 'bun:test'
import { ROOT } from '../support/gateway'
import { setup, TEST_MS } from '../support/hooks'
import { describeWithServers, type PostgresServer, sharedPostgres } from '../support/servers'

setDefaultTimeout(TEST_MS)

// An instance of the cluster test went away while Postgres was stopped: "TypeError: null is not an
// object (evaluating 'socket.write')" at postgres.js's nextWrite, thrown from a timer, so nothing
// could catch it and the process ended (porsager/postgres#1066, #1154, #1208; unfixed in 3.4.9).
// A write on a connection whose socket had closed was sent later to no socket. The gateway now
// installs postgres.js with a patch (patches/postgres@3.4.9.patch): such a write fails its query
// with CONNECTION_CLOSED, which the caller handles. Here the write comes deterministically: a query
// on a reserved connection after its server process was terminated. In a process of its own: the
// unpatched library ends it.
const script = `
import postgres from 'postgres'
let closed
const closedOnce = new Promise((resolve) => (closed = resolve))
const sql = postgres(process.env.PG_URL, { max: 2, onclose: () => closed() })
const reserved = await sql.reserve()
const [{ pid }] = await reserved\`select pg_backend_pid() as pid\`
await sql\`select pg_terminate_backend(\${pid})\`
await closedOnce
const outcome = await reserved\`select 1\`.then(() => 'answered', (error) => 'refused ' + error.code)
process.stdout.write(outcome + '\\n')
await sql.end({ timeout: 1 })
`

describeWithServers('postgres.js, a query on a connection whose socket closed', ['postgres'], () => {
  let pg: PostgresServer
  setup(async () => {
    pg = await sharedPostgres()
  })

  test('is refused with CONNECTION_CLOSED, and the process goes on (it ended on an uncaught TypeError before)', async () => {
    const run = Bun.spawn(['bun', '-e', script], { cwd: ROOT, env: { ...process.env, PG_URL: await pg.createDatabase() }, stdout: 'pipe', stderr: 'pipe' })
    const [out, err, code] = await Promise.all([new Response(run.stdout).text(), new Response(run.stderr).text(), run.exited])
    expect({ out: out.trim(), code, crashed: err.includes('socket.write') }).toEqual({ out: 'refused CONNECTION_CLOSED', code: 0, crashed: false })
  })
})
