import { Elysia, t } from 'elysia'
import { notFound } from '../../../src/errors'
import { ADMIN_SECURITY, adminAuth, defineAdminRoute } from '../../../src/http/admin'
import { LoggedRequestSchema } from '../../../src/http/request-log-schemas'
import { ErrorSchema } from '../../../src/http/schemas'

export default defineAdminRoute((gateway) =>
  new Elysia().use(adminAuth(gateway)).get(
    '',
    async ({ params }) => {
      const record = await gateway.serving.requestLog.get(params.id)
      if (record === null) throw notFound(`No request with id "${params.id}" in the request log`, { code: 'request_not_found' })
      return record
    },
    {
      params: t.Object({ id: t.String({ description: "The request's x-request-id" }) }),
      response: { 200: LoggedRequestSchema, 401: ErrorSchema, 404: ErrorSchema, 429: ErrorSchema },
      detail: { tags: ['Admin'], summary: 'One request log record (the newest, should a caller have reused its request id)', security: ADMIN_SECURITY },
    },
  ),
)
