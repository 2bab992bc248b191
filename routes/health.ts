import { Elysia, t } from 'elysia'
import { Int } from '../src/http/schemas'
import { checkHealth, VERSION } from '../src/gateway'
import { defineRoute } from '../src/http/route'

const HealthSchema = t.Object({
  ok: t.Boolean(),
  version: t.String(),
  database: t.String({ description: '"ok", or "unavailable: <reason>"' }),
  limiter: t.String({ description: '"in memory" (one instance), or the shared Redis: "ok" or "unavailable: <reason>"' }),
  uptime_s: Int(),
})

export default defineRoute((gateway) => {
  const started = performance.now()
  return new Elysia().get(
    '',
    async ({ set }) => {
      const health = await checkHealth(gateway)
      if (!health.ok) set.status = 503
      return { ok: health.ok, version: VERSION, database: health.database, limiter: health.limiter, uptime_s: Math.floor((performance.now() - started) / 1000) }
    },
    {
      response: { 200: HealthSchema, 503: HealthSchema },
      detail: {
        tags: ['Service'],
        summary: 'Health signal',
        description:
          '200 `{ok:true}` while requests can be served, else 503 `{ok:false}`: the database (SQLite) or the shared limiter (Redis) unavailable. With several instances, Postgres unavailable is reported in `database` but stays 200: known keys are still served and usage waits in Redis.',
      },
    },
  )
})
