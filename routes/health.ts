import { Elysia, t } from 'elysia'
import { Int } from '../src/http/schemas'
import { VERSION } from '../src/gateway'
import { checkHealth } from '../src/gateway-health'
import { defineRoute } from '../src/http/route'

const HealthSchema = t.Object({
  ok: t.Boolean(),
  version: t.String(),
  database: t.String({ description: '"ok", or "unavailable: <reason>"' }),
  limiter: t.String({ description: '"in memory" (one instance), or the shared Redis: "ok" or "unavailable: <reason>"' }),
  usage: t.String({ description: '"ok", or "unavailable: <reason>" while usage cannot be made durable (a full disk): requests are then refused with 503' }),
  uptime_s: Int(),
  config: t.Object(
    {
      version: Int({ description: 'Version of the config in force (every start or reload on any instance adds one)' }),
      hash: t.Union([t.String(), t.Null()], {
        description: 'SHA-256 of the config file that wrote the config in force; null: written by a version that kept no hash',
      }),
      file_hash: t.String({ description: "SHA-256 of this instance's own config file, as it last read it" }),
      in_sync: t.Boolean({ description: "Whether this instance's file says what the config in force says (GET /admin/config names the differences)" }),
      differences: Int({ description: 'How many entries differ' }),
    },
    {
      description:
        'The last instance to start or reload writes the config in force; every instance serves it. A difference is reported here, never a reason for 503.',
    },
  ),
})

export default defineRoute((gateway) => {
  const started = performance.now()
  return new Elysia().get(
    '',
    async ({ set }) => {
      const health = await checkHealth(gateway)
      if (!health.ok) set.status = 503
      return {
        ok: health.ok,
        version: VERSION,
        database: health.database,
        limiter: health.limiter,
        usage: health.usage,
        uptime_s: Math.floor((performance.now() - started) / 1000),
        config: health.config,
      }
    },
    {
      response: { 200: HealthSchema, 503: HealthSchema },
      detail: {
        tags: ['Service'],
        summary: 'Health signal',
        description:
          '200 `{ok:true}` while requests can be served, else 503 `{ok:false}`: the database (SQLite), the shared limiter (Redis) or the usage store (a full disk) unavailable. With several instances, Postgres unavailable is reported in `database` but stays 200: known keys are still served and usage waits in Redis.',
      },
    },
  )
})
