import { Elysia } from 'elysia'
import { ADMIN_SECURITY, adminAuth, defineAdminRoute } from '../../src/http/admin'
import { RequestPageSchema, RequestQuerySchema } from '../../src/http/request-log-schemas'
import { ErrorSchema } from '../../src/http/schemas'
import { requestQuery } from '../../src/request-log/store'

export default defineAdminRoute((gateway) =>
  new Elysia().use(adminAuth(gateway)).get('', ({ query }) => gateway.serving.requestLog.list(requestQuery(query)), {
    query: RequestQuerySchema,
    response: { 200: RequestPageSchema, 400: ErrorSchema, 401: ErrorSchema, 429: ErrorSchema },
    detail: {
      tags: ['Admin'],
      summary: 'The request log: one record per request, newest first, filtered and paged',
      description:
        'Every request to an inbound API (chat completions, messages, responses, embeddings, count_tokens, Gemini) has a record, refused ones included; 401s are only counted in metrics. Pages never skip or repeat a record, whatever is written meanwhile.',
      security: ADMIN_SECURITY,
    },
  }),
)
