import { openapi } from '@elysiajs/openapi'
import { Elysia } from 'elysia'
import type { Gateway } from './gateway'
import { VERSION } from './gateway'
import { httpConventions, openaiErrorFormat } from './http/conventions'
import { earlyRefusal } from './http/early-refusal'
import { importRoutes, mountRoutes } from './http/routes-loader'
import { pageSecurityHeaders } from './http/page-security'
import { AnthropicErrorSchema } from './http/inbound-schemas'
import { ErrorSchema } from './http/schemas'
import { anthropicErrorBody } from './wire/anthropic/errors'
import { googleErrorBody } from './wire/gemini/errors'
import { ROUTE_TABLE } from './route-table'

export interface AppOptions {
  /** Where route files live; tests point this at a temporary folder. Default: the routes of src/route-table.ts. */
  routesDir?: string
}

/** The whole HTTP surface: conventions first, then the docs, then every route file. */
export async function createApp(gateway: Gateway, { routesDir }: AppOptions = {}) {
  const routes = mountRoutes(routesDir === undefined ? ROUTE_TABLE : await importRoutes(routesDir), gateway)
  const docs = () =>
    openapi({
      path: '/swagger',
      provider: 'swagger-ui',
      swagger: { cdn: '/swagger/assets/swagger-ui-bundle.js', theme: '/swagger/assets/swagger-ui.css', autoDarkMode: false },
      documentation: {
        info: {
          title: 'chatgate API',
          version: VERSION,
          description: 'Self-hosted, OpenAI-compatible chat completion gateway. Every error has the body `{"error":{"message","type","code?","param?"}}`.',
        },
        tags: [
          { name: 'Chat', description: 'Chat completions over public model aliases' },
          {
            name: 'Responses',
            description: "OpenAI's Responses API over the same aliases (Codex CLI, the Agents SDK); stored responses for previous_response_id",
          },
          { name: 'Messages', description: "Anthropic's Messages API over the same aliases (Anthropic SDK, Claude Code); errors in Anthropic's shape" },
          { name: 'Gemini', description: "Google's generateContent API over the same aliases (Gemini CLI, the Google GenAI SDK); errors in Google's shape" },
          { name: 'Embeddings', description: 'Embeddings over public model aliases' },
          { name: 'Models', description: 'Public model aliases' },
          { name: 'Usage', description: "The caller's own usage counters" },
          { name: 'Service', description: 'Metadata, health and metrics' },
          { name: 'Admin', description: 'Operator API: on only when GATEWAY_ADMIN_KEY is set; takes that key only' },
        ],
        components: {
          securitySchemes: {
            bearerAuth: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <key>' },
            apiKeyHeader: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'x-api-key: <key>' },
            googApiKey: { type: 'apiKey', in: 'header', name: 'x-goog-api-key', description: 'x-goog-api-key: <key> (as Google clients send it)' },
            adminBearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <GATEWAY_ADMIN_KEY>' },
            adminApiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'x-api-key: <GATEWAY_ADMIN_KEY>' },
          },
          schemas: { Error: ErrorSchema as object, AnthropicError: AnthropicErrorSchema as object },
        },
      },
    })
  // The Swagger UI page is the plugin's: read it once from a spare instance (the plugin hands out one
  // Response object), so the page's CSP can allow exactly its inline script.
  const swaggerPage = await (await new Elysia().use(docs()).handle(new Request('http://localhost/swagger'))).text()
  // normalize off: a field a strict schema does not know is refused with 400, never silently dropped.
  // standardHostname off: Elysia then finds the path after "http://" and the host, rather than at
  // the first "/" from offset 11, which a Host shorter than 4 characters would shift into the path.
  return new Elysia({ normalize: false, handler: { standardHostname: false } })
    .use(
      httpConventions({
        headers: gateway.headers,
        body: { maxBytes: gateway.env.maxBodyBytes, maxDepth: gateway.env.maxJsonDepth, timeoutMs: gateway.env.bodyTimeoutMs },
        log: gateway.log,
        observer: gateway.observer,
        pageHeaders: new Map([['/swagger', pageSecurityHeaders(swaggerPage)]]),
        // Anthropic's SDK and Claude Code read Anthropic's error shape on the Messages API; Google's
        // SDK and Gemini CLI Google's on the Gemini-native routes.
        errorFormatFor: (path) =>
          path === '/v1/messages' || path.startsWith('/v1/messages/') ? anthropicErrorBody : path.startsWith('/v1beta/') ? googleErrorBody : openaiErrorFormat,
        refuseBeforeBody: earlyRefusal({
          keyCache: gateway.keyCache,
          routing: () => gateway.routing,
          limiter: gateway.limiter,
          now: gateway.now,
          refused: () => gateway.metrics.refusals.inc('requests'),
        }),
      }),
    )
    .use(docs())
    .use(routes)
}

export type App = Awaited<ReturnType<typeof createApp>>
