import { Elysia, t } from 'elysia'
import { reloadConfig } from '../../src/gateway'
import { ADMIN_SECURITY, adminAuth, defineAdminRoute } from '../../src/http/admin'
import { ErrorSchema, Int } from '../../src/http/schemas'

export default defineAdminRoute((gateway) =>
  new Elysia().use(adminAuth(gateway)).post('', async () => ({ ok: true as const, ...(await reloadConfig(gateway)) }), {
    response: {
      200: t.Object({ ok: t.Literal(true), source: t.String(), tiers: Int(), upstreams: Int(), aliases: Int() }),
      400: ErrorSchema,
      401: ErrorSchema,
    },
    detail: {
      tags: ['Admin'],
      summary: 'Re-read the config file and swap routing atomically',
      description:
        'Requests in flight finish on the old routing. A bad file is refused with 400 naming the field, and the old config stays. SIGHUP does the same.',
      security: ADMIN_SECURITY,
    },
  }),
)
