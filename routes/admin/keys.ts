import { Elysia, t } from 'elysia'
import { keyView } from '../../src/auth/keys'
import { ADMIN_SECURITY, adminAuth, defineAdminRoute } from '../../src/http/admin'
import { KeyCreateSchema, KeyRecordSchema, KeySpendSchema, keyFieldsOf } from '../../src/http/admin-schemas'
import { keysWithSpend } from '../../src/auth/key-spend'
import { ErrorSchema } from '../../src/http/schemas'

export default defineAdminRoute((gateway) =>
  new Elysia()
    .use(adminAuth(gateway))
    .get('', async () => ({ data: await keysWithSpend(gateway) }), {
      response: { 200: t.Object({ data: t.Array(t.Composite([KeyRecordSchema, KeySpendSchema])) }), 401: ErrorSchema, 429: ErrorSchema },
      detail: { tags: ['Admin'], summary: 'List keys (prefixes only, never the keys)', security: ADMIN_SECURITY },
    })
    .post(
      '',
      async ({ body, set }) => {
        const { record, key } = await gateway.keys.create({ ...keyFieldsOf(body), name: body.name, tier: body.tier })
        set.status = 201
        return { ...keyView(record), key }
      },
      {
        body: KeyCreateSchema,
        response: {
          201: t.Composite([KeyRecordSchema, t.Object({ key: t.String({ description: 'Shown only in this response' }) })]),
          400: ErrorSchema,
          401: ErrorSchema,
          429: ErrorSchema,
        },
        detail: { tags: ['Admin'], summary: 'Create a key; the response is the only time the key is shown', security: ADMIN_SECURITY },
      },
    ),
)
