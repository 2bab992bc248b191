import { Elysia, t } from 'elysia'
import { VERSION } from '../src/gateway'
import { defineRoute } from '../src/http/route'

const ENDPOINTS = [
  'GET /',
  'GET /health',
  'GET /v1/models',
  'GET /v1/models/{prefix}/{name}',
  'POST /v1/chat/completions',
  'POST /v1/messages',
  'POST /v1/messages/count_tokens',
  'POST /v1/embeddings',
  'GET /v1/usage',
  'GET /swagger',
  'GET /swagger/json',
]

export default defineRoute(() =>
  new Elysia().get(
    '/',
    () => ({
      name: 'chatgate',
      version: VERSION,
      description: "Self-hosted LLM gateway: OpenAI chat completions, Anthropic's Messages API and embeddings over public model aliases.",
      docs: '/swagger',
      endpoints: ENDPOINTS,
    }),
    {
      response: {
        200: t.Object({ name: t.String(), version: t.String(), description: t.String(), docs: t.String(), endpoints: t.Array(t.String()) }),
      },
      detail: { tags: ['Service'], summary: 'Service metadata' },
    },
  ),
)
