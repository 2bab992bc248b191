import { Elysia, t } from 'elysia'
import { keyPageQuery } from '../../src/auth/key-listing'
import { keyView } from '../../src/auth/keys'
import { ADMIN_SECURITY, adminAuth, defineAdminRoute } from '../../src/http/admin'
import { KeyCreateSchema, KeyListQuerySchema, KeyPageSchema, KeyRecordSchema, keyFieldsOf } from '../../src/http/admin-schemas'
import { keysWithSpend } from '../../src/auth/key-spend'
import { ErrorSchema } from '../../src/http/schemas'

export default defineAdminRoute((gateway) =>
  new Elysia()
    .use(adminAuth(gateway))
    .get('', ({ query }) => keysWithSpend(gateway, keyPageQuery(query)), {
      query: KeyListQuerySchema,
      response: { 200: KeyPageSchema, 400: ErrorSchema, 401: ErrorSchema, 429: ErrorSchema },
      detail: {
        tags: ['Admin'],
        summary: 'List keys a page at a time (prefixes only, never the keys)',
        description:
          'Keys in id order, a stable order: following `next_cursor` from the first page to the last lists every key once, keys created meanwhile included or not but never twice. `q` searches names, prefixes and ids.',
        security: ADMIN_SECURITY,
      },
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
