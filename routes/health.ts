import { Elysia, t } from 'elysia'
import { Int } from '../src/http/schemas'
import { VERSION } from '../src/gateway'
import { defineRoute } from '../src/http/route'

const HealthSchema = t.Object({ ok: t.Boolean(), version: t.String(), database: t.String(), uptime_s: Int() })

export default defineRoute((gateway) => {
  const started = performance.now()
  return new Elysia().get(
    '',
    async ({ set }) => {
      const uptime_s = Math.floor((performance.now() - started) / 1000)
      try {
        await gateway.stores.ping()
        return { ok: true, version: VERSION, database: 'ok', uptime_s }
      } catch (error) {
        set.status = 503
        return { ok: false, version: VERSION, database: `unavailable: ${(error as Error).message}`, uptime_s }
      }
    },
    {
      response: { 200: HealthSchema, 503: HealthSchema },
      detail: { tags: ['Service'], summary: 'Health signal', description: '200 `{ok:true}` when the database answers, else 503 `{ok:false}`.' },
    },
  )
})
