import { expect, setDefaultTimeout, test } from 'bun:test'
import { ROOT } from '../support/gateway'
import { TEST_MS } from '../support/hooks'

setDefaultTimeout(TEST_MS)

// An instance of the cluster test went away while Postgres was stopped: the runtime ends the
// process on a promise rejected with no handler, and a database client reconnecting in the
// background can leave one. Now such a rejection is a log line, and the process serves on. (In a
// process of its own: the test runner fails any test that leaves such a rejection.)
const script = `
import { createLogger } from './src/log'
import { keepServingOnStrayRejections } from './src/stray-rejections'
keepServingOnStrayRejections(createLogger('info'))
void Promise.reject(new Error('connection closed while reconnecting'))
void Promise.reject(new Error('a second one, within the same second'))
setTimeout(() => process.stdout.write('still serving\\n'), 50)
`

test('a promise rejected with no handler is logged once a second at most, and the process goes on', async () => {
  const run = Bun.spawn(['bun', '-e', script], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  const [out, code] = await Promise.all([new Response(run.stdout).text(), run.exited])
  expect(code).toBe(0)
  expect(out).toContain('still serving')
  expect(out).toContain('"reason":"connection closed while reconnecting"')
  expect(out).toContain('a promise was rejected with no handler; the gateway goes on serving')
  expect(out).not.toContain('a second one')
})

test('without it, the runtime ends the process: what the handler is for', async () => {
  const run = Bun.spawn(['bun', '-e', script.replace(/^keepServingOnStrayRejections.*$/m, '')], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  const [out, code] = await Promise.all([new Response(run.stdout).text(), run.exited])
  expect(code).not.toBe(0)
  expect(out).not.toContain('still serving')
})
