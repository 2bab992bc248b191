import { Elysia, t } from 'elysia'
import { keyView } from '../../../src/auth/keys'
import { ADMIN_SECURITY, adminAuth, defineAdminRoute } from '../../../src/http/admin'
import { KeyPatchSchema, KeyRecordSchema, keyFieldsOf } from '../../../src/http/admin-schemas'
import { ErrorSchema } from '../../../src/http/schemas'

const params = t.Object({ id: t.String({ description: 'Key id (or its visible prefix)' }) })
const responses = { 200: KeyRecordSchema, 401: ErrorSchema, 404: ErrorSchema, 429: ErrorSchema }

export default defineAdminRoute((gateway) =>
  new Elysia()
    .use(adminAuth(gateway))
    .get('', async ({ params }) => keyView(await gateway.keys.find(params.id)), {
      params,
      response: responses,
      detail: { tags: ['Admin'], summary: 'Get one key', security: ADMIN_SECURITY },
    })
    .patch('', async ({ params, body }) => keyView(await gateway.keys.update(params.id, keyFieldsOf(body))), {
      params,
      body: KeyPatchSchema,
      response: { ...responses, 400: ErrorSchema },
      detail: { tags: ['Admin'], summary: 'Change a key: tier, limits, expiry, name (null clears an override)', security: ADMIN_SECURITY },
    })
    .delete('', async ({ params }) => keyView(await gateway.keys.revoke(params.id)), {
      params,
      response: responses,
      detail: { tags: ['Admin'], summary: 'Revoke a key (it stops working at once)', security: ADMIN_SECURITY },
    }),
)
