import { Elysia, t } from 'elysia'
import { invalidRequest } from '../../../src/errors'
import { ADMIN_SECURITY, adminAuth, defineAdminRoute } from '../../../src/http/admin'
import { ErrorSchema, Int } from '../../../src/http/schemas'
import type { SeriesBucket } from '../../../src/usage/reports'

/** Default span per bucket size: the dashboard's "last hour / day / 30 days". */
const DEFAULT_SPAN_MS: Record<SeriesBucket, number> = { minute: 3_600_000, hour: 86_400_000, day: 30 * 86_400_000 }

function time(param: 'from' | 'to', value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback
  const ms = Date.parse(value)
  if (Number.isNaN(ms)) throw invalidRequest(`Invalid request: ${param} must be an ISO time like 2026-01-31T12:00:00Z`, { param: param })
  return ms
}

const PointSchema = t.Object({
  t: t.String({ description: 'Bucket start, ISO time (UTC)' }),
  requests: Int(),
  errors: Int(),
  prompt_tokens: Int(),
  completion_tokens: Int(),
  cost_usd: t.Number(),
  cache_saved_usd: t.Number(),
  p50_ms: t.Union([t.Number(), t.Null()]),
  p95_ms: t.Union([t.Number(), t.Null()]),
})

export default defineAdminRoute((gateway) =>
  new Elysia().use(adminAuth(gateway)).get(
    '',
    async ({ query }) => {
      const bucket = query.bucket ?? 'minute'
      const to = time('to', query.to, gateway.now())
      const from = time('from', query.from, to - DEFAULT_SPAN_MS[bucket])
      return { bucket, data: await gateway.reports.series({ from, to, bucket, keyId: query.key_id, alias: query.alias, upstream: query.upstream }) }
    },
    {
      query: t.Object({
        from: t.Optional(t.String({ description: 'ISO time; default `to` minus 1 hour, 1 day or 30 days by bucket' })),
        to: t.Optional(t.String({ description: 'ISO time; default now' })),
        bucket: t.Optional(
          t.Union([t.Literal('minute'), t.Literal('hour'), t.Literal('day')], { error: 'Invalid request: bucket must be minute, hour or day' }),
        ),
        key_id: t.Optional(t.String()),
        alias: t.Optional(t.String()),
        upstream: t.Optional(t.String()),
      }),
      response: { 200: t.Object({ bucket: t.String(), data: t.Array(PointSchema) }), 400: ErrorSchema, 401: ErrorSchema, 429: ErrorSchema },
      detail: {
        tags: ['Admin'],
        summary: 'Usage as a time series (requests, errors, tokens, p50/p95 latency)',
        description:
          'Dense: every bucket in the range, zeros where nothing happened. Minute and hour buckets read the per-minute rollups; day buckets count from the daily counters.',
        security: ADMIN_SECURITY,
      },
    },
  ),
)
