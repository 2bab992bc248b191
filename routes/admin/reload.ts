import { Elysia, t } from 'elysia'
import { reloadConfig } from '../../src/gateway'
import { ADMIN_SECURITY, adminAuth, defineAdminRoute } from '../../src/http/admin'
import { ErrorSchema, Int } from '../../src/http/schemas'

export default defineAdminRoute((gateway) =>
  new Elysia().use(adminAuth(gateway)).post('', async () => ({ ok: true as const, ...(await reloadConfig(gateway)) }), {
    response: {
      200: t.Object({
        ok: t.Literal(true),
        source: t.String(),
        hash: t.String({ description: 'SHA-256 of the file now in force (see GET /admin/config)' }),
        version: Int({ description: 'The config version this reload wrote' }),
        tiers: Int(),
        upstreams: Int(),
        aliases: Int(),
      }),
      400: ErrorSchema,
      401: ErrorSchema,
      429: ErrorSchema,
    },
    detail: {
      tags: ['Admin'],
      summary: 'Re-read the config file and swap routing atomically',
      description:
        'Requests in flight finish on the old routing. A bad file is refused with 400 naming the field, and the old config stays. SIGHUP does the same. The file becomes the config in force for every instance on the database (the last start or reload wins).',
      security: ADMIN_SECURITY,
    },
  }),
)
