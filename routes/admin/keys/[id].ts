import { Elysia, t } from 'elysia'
import { findApiKey, keyView, revokeApiKey, updateApiKey } from '../../../src/auth/keys'
import { ADMIN_SECURITY, adminAuth, defineAdminRoute } from '../../../src/http/admin'
import { KeyPatchSchema, KeyRecordSchema, keyFieldsOf } from '../../../src/http/admin-schemas'
import { ErrorSchema } from '../../../src/http/schemas'

const params = t.Object({ id: t.String({ description: 'Key id (or its visible prefix)' }) })
const responses = { 200: KeyRecordSchema, 401: ErrorSchema, 404: ErrorSchema }

export default defineAdminRoute((gateway) =>
  new Elysia()
    .use(adminAuth(gateway))
    .get('', ({ params }) => keyView(findApiKey(gateway.storage.db, params.id)), {
      params,
      response: responses,
      detail: { tags: ['Admin'], summary: 'Get one key', security: ADMIN_SECURITY },
    })
    .patch(
      '',
      ({ params, body }) => {
        const record = updateApiKey(gateway.storage.db, params.id, keyFieldsOf(body), gateway.now())
        gateway.keys.reload()
        return keyView(record)
      },
      {
        params,
        body: KeyPatchSchema,
        response: { ...responses, 400: ErrorSchema },
        detail: { tags: ['Admin'], summary: 'Change a key: tier, limits, expiry, name (null clears an override)', security: ADMIN_SECURITY },
      },
    )
    .delete(
      '',
      ({ params }) => {
        const record = revokeApiKey(gateway.storage.db, params.id, gateway.now())
        gateway.keys.reload()
        return keyView(record)
      },
      { params, response: responses, detail: { tags: ['Admin'], summary: 'Revoke a key (it stops working at once)', security: ADMIN_SECURITY } },
    ),
)
