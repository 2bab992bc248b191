import { Elysia, t } from 'elysia'
import { ADMIN_SECURITY, adminAuth, defineAdminRoute } from '../../src/http/admin'
import { redactUrl } from '../../src/http/redact'
import { ErrorSchema, Int } from '../../src/http/schemas'

const UpstreamSchema = t.Object({
  name: t.String(),
  kind: t.String(),
  base_url: t.Union([t.String({ description: 'User, password and query values shown as ***' }), t.Null()]),
  api_key_env: t.Union([t.String(), t.Null()]),
  api_key_set: t.Boolean({ description: 'Whether that environment variable is set; the secret itself is never shown' }),
  timeout_ms: Int(),
  connect_timeout_ms: Int(),
  max_retries: Int(),
  failure_threshold: Int(),
  cooldown_ms: Int(),
})

export default defineAdminRoute((gateway) =>
  new Elysia().use(adminAuth(gateway)).get(
    '',
    () => ({
      data: gateway.routing.upstreams.map((u) => ({
        name: u.name,
        kind: u.kind,
        base_url: u.baseUrl === null ? null : redactUrl(u.baseUrl),
        api_key_env: u.apiKeyEnv,
        api_key_set: u.apiKeyEnv !== null && Boolean(gateway.env.vars[u.apiKeyEnv]),
        timeout_ms: u.timeoutMs,
        connect_timeout_ms: u.connectTimeoutMs,
        max_retries: u.maxRetries,
        failure_threshold: u.failureThreshold,
        cooldown_ms: u.cooldownMs,
      })),
    }),
    {
      response: { 200: t.Object({ data: t.Array(UpstreamSchema) }), 401: ErrorSchema, 429: ErrorSchema },
      detail: { tags: ['Admin'], summary: 'Upstreams in force (never their secrets)', security: ADMIN_SECURITY },
    },
  ),
)
