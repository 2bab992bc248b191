import { Elysia, t } from 'elysia'
import { ADMIN_SECURITY, adminAuth, defineAdminRoute } from '../../src/http/admin'
import { UsageReportSchema } from '../../src/http/admin-schemas'
import { ErrorSchema } from '../../src/http/schemas'
import { usageRange } from '../../src/usage/reports'

export default defineAdminRoute((gateway) =>
  new Elysia().use(adminAuth(gateway)).get(
    '',
    ({ query }) => {
      const range = usageRange(query.from, query.to, gateway.now())
      return gateway.reports.report({ ...range, keyId: query.key_id, alias: query.alias, upstream: query.upstream })
    },
    {
      query: t.Object({
        key_id: t.Optional(t.String()),
        alias: t.Optional(t.String()),
        upstream: t.Optional(t.String()),
        from: t.Optional(t.String({ description: 'First UTC day, YYYY-MM-DD (default today)' })),
        to: t.Optional(t.String({ description: 'Last UTC day, inclusive (default today)' })),
      }),
      response: { 200: UsageReportSchema, 400: ErrorSchema, 401: ErrorSchema, 429: ErrorSchema },
      detail: { tags: ['Admin'], summary: 'Usage counters across keys, by key, alias, upstream and day', security: ADMIN_SECURITY },
    },
  ),
)
