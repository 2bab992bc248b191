/**
 * A fake Vertex AI and its OAuth token endpoint, written from Google's published reference:
 *   - Vertex AI REST (publishers.models generateContent, streamGenerateContent, countTokens, predict;
 *     the `projects/{project}/locations/{location}/publishers/{publisher}/models/{model}` path):
 *     https://cloud.google.com/vertex-ai/docs/reference/rest
 *   - the generateContent body and answer, the same as the Gemini API's:
 *     https://ai.google.dev/api/generate-content (the model is test/support/fakes/gemini.ts's)
 *   - text embeddings through `:predict` (`instances[].content`, `predictions[].embeddings.values`
 *     and `.statistics.token_count`; gemini-embedding-001 takes one instance a request):
 *     https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/text-embeddings-api
 *   - Claude on Vertex AI (`publishers/anthropic/models/{model}:rawPredict` / `:streamRawPredict`,
 *     Anthropic's body without `model` and with `anthropic_version: "vertex-2023-10-16"`; token
 *     counts at `count-tokens:rawPredict`): https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude
 *     (answered by the fake Anthropic API of ./anthropic.ts, behind it). In front of it, Claude's rule
 *     for thinking with tools (https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#preserving-thinking-blocks):
 *     with thinking on, the assistant turn of the last tool call must start with its thinking, else
 *     Anthropic's 400 in Anthropic's error shape, as Vertex AI relays it with a `req_vrtx_` request id
 *     (the wording as Vertex AI users report it, e.g. https://github.com/Kilo-Org/kilocode/issues/5219)
 *   - the OAuth 2.0 service-account flow: a form-encoded POST to the account's `token_uri` with
 *     `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` and `assertion`, an RS256 JWT with
 *     `iss` the account's email, `scope`, `aud` the token URI, `iat` and `exp` at most an hour apart:
 *     https://developers.google.com/identity/protocols/oauth2/service-account
 *
 * The token endpoint checks the JWT's signature with the account's public key (node:crypto, not the
 * library the gateway signs with), and every API call's bearer token is one it issued and has not
 * revoked (else 401 UNAUTHENTICATED, as Google answers an expired token).
 */
import { createVerify, generateKeyPairSync, type KeyObject } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { RecordedCall } from './common'
import { recordingServer } from './common'
import { fakeVector, geminiModel, type GeminiModel, type GeminiModelOptions, googleError, googleSse } from './gemini'

type Json = Record<string, any>

export const CLOUD_PLATFORM = 'https://www.googleapis.com/auth/cloud-platform'

export interface ServiceAccountFile {
  path: string
  publicKey: string
  account: Json
}

/** A throwaway RSA key pair (about 0.15 s to make). */
export const accountKeyPair = (): KeyPair => generateKeyPairSync('rsa', { modulusLength: 2048 })
type KeyPair = { privateKey: KeyObject; publicKey: KeyObject }

/** A service-account key file naming `tokenUri`, written into `dir`, with a throwaway key pair (or the one given). */
export function serviceAccountFile(dir: string, tokenUri: string, name = 'service-account.json', keys: KeyPair = accountKeyPair()): ServiceAccountFile {
  const { privateKey, publicKey } = keys
  const account = {
    type: 'service_account',
    project_id: 'chatgate-test',
    private_key_id: 'fake-key-id-1',
    private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    client_email: 'gateway@chatgate-test.iam.gserviceaccount.com',
    client_id: '1234567890',
    token_uri: tokenUri,
  }
  const path = join(dir, name)
  writeFileSync(path, JSON.stringify(account, null, 2))
  return { path, publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(), account }
}

const base64urlJson = (text: string): Json => JSON.parse(Buffer.from(text, 'base64url').toString('utf8'))

/** What is wrong with an assertion, checked as Google's token endpoint does; null when it is good. */
export function assertionProblem(assertion: string, publicKey: string, account: Json, nowSeconds: number): string | null {
  const parts = assertion.split('.')
  if (parts.length !== 3) return 'not a JWT'
  const [header, claims, signature] = parts as [string, string, string]
  const verified = createVerify('RSA-SHA256').update(`${header}.${claims}`).verify(publicKey, Buffer.from(signature, 'base64url'))
  if (!verified) return 'Invalid JWT Signature.'
  const h = base64urlJson(header)
  const c = base64urlJson(claims)
  if (h.alg !== 'RS256' || h.typ !== 'JWT') return `unexpected header ${JSON.stringify(h)}`
  if (c.iss !== account.client_email) return 'iss is not the account'
  if (c.aud !== account.token_uri) return 'aud is not the token URI'
  if (c.scope !== CLOUD_PLATFORM) return `scope ${c.scope}`
  if (typeof c.iat !== 'number' || typeof c.exp !== 'number' || c.exp - c.iat > 3600 || c.exp <= c.iat) return 'iat/exp invalid'
  if (Math.abs(c.iat - nowSeconds) > 300) return 'iat is not now'
  return null
}

export interface FakeVertexOptions extends GeminiModelOptions {
  project?: string
  location?: string
  /** The fake Anthropic API that answers for Claude models (its `/v1` URL) and the key it takes. */
  anthropic?: { url: string; apiKey: string }
  /** How long the token endpoint takes to answer (default 50 ms): concurrent requests pile up on one token. */
  tokenDelayMs?: number
  /** `expires_in` of the tokens it issues (default 3600). */
  tokenSeconds?: number
}

export interface FakeVertex {
  /** `https://{location}-aiplatform.googleapis.com/v1`'s stand-in: the `base_url` of a vertex upstream. */
  url: string
  /** The token endpoint (the service account's `token_uri`). */
  tokenUri: string
  calls: RecordedCall[]
  /** The token requests it accepted, and the problems of those it refused. */
  tokenRequests: number
  refusedAssertions: string[]
  model: GeminiModel
  /** The account whose assertions it accepts: set before the first request. */
  trust(file: ServiceAccountFile): void
  /** Every token issued so far is refused from now on (as when they expire). */
  revokeTokens(): void
  stop(): void
}

const blocksOf = (content: unknown): Json[] => (typeof content === 'string' ? [{ type: 'text', text: content }] : Array.isArray(content) ? content : [])

/**
 * With thinking enabled (or adaptive), the last assistant turn with a tool_use must start with a
 * thinking or redacted_thinking block: Anthropic's message for it, or null.
 */
function thinkingFirstProblem(body: Json): string | null {
  if (body.thinking?.type !== 'enabled' && body.thinking?.type !== 'adaptive') return null
  const messages: Json[] = Array.isArray(body.messages) ? body.messages : []
  const i = messages.findLastIndex((m) => m.role === 'assistant' && blocksOf(m.content).some((b) => b.type === 'tool_use'))
  if (i === -1) return null
  const found = blocksOf(messages[i]!.content)[0]?.type
  if (found === 'thinking' || found === 'redacted_thinking') return null
  return (
    `messages.${i}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${found}\`. When \`thinking\` is enabled, a final ` +
    '`assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend ' +
    'you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at ' +
    'https://docs.claude.com/en/docs/build-with-claude/extended-thinking'
  )
}

/** Anthropic's error shape, as Vertex AI relays Claude's errors. */
const claudeError = (status: number, type: string, message: string) =>
  Response.json({ type: 'error', error: { type, message }, request_id: `req_vrtx_fake_${status}` }, { status })

export function fakeVertex(options: FakeVertexOptions = {}): FakeVertex {
  const project = options.project ?? 'chatgate-test'
  const location = options.location ?? 'us-central1'
  const model = geminiModel(options)
  const live = new Set<string>()
  let trusted: ServiceAccountFile | null = null
  let issued = 0
  const state = { tokenRequests: 0, refusedAssertions: [] as string[] }

  async function token(call: RecordedCall): Promise<Response> {
    const form = new URLSearchParams(call.text)
    if (call.headers.get('content-type') !== 'application/x-www-form-urlencoded')
      return Response.json({ error: 'invalid_request', error_description: 'form expected' }, { status: 400 })
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return Response.json({ error: 'unsupported_grant_type' }, { status: 400 })
    const problem = trusted
      ? assertionProblem(form.get('assertion') ?? '', trusted.publicKey, trusted.account, Math.floor(Date.now() / 1000))
      : 'no account trusted'
    if (problem) {
      state.refusedAssertions.push(problem)
      return Response.json({ error: 'invalid_grant', error_description: problem }, { status: 400 })
    }
    state.tokenRequests++
    await Bun.sleep(options.tokenDelayMs ?? 50)
    const value = `ya29.fake-${++issued}`
    live.add(value)
    return Response.json({ access_token: value, expires_in: options.tokenSeconds ?? 3600, token_type: 'Bearer' })
  }

  async function claude(name: string, method: string, call: RecordedCall): Promise<Response> {
    const body = call.body as Json
    if (!options.anthropic) return googleError(404, 'NOT_FOUND', 'no Claude here')
    if (body.anthropic_version !== 'vertex-2023-10-16') return googleError(400, 'INVALID_ARGUMENT', 'anthropic_version: must be vertex-2023-10-16')
    const headers = { 'content-type': 'application/json', 'x-api-key': options.anthropic.apiKey, 'anthropic-version': '2023-06-01' }
    const { anthropic_version: _, ...rest } = body
    if (name === 'count-tokens' && method === 'rawPredict') {
      return fetch(`${options.anthropic.url}/messages/count_tokens`, { method: 'POST', headers, body: JSON.stringify(rest) })
    }
    if (body.model !== undefined) return googleError(400, 'INVALID_ARGUMENT', 'model: the model is in the URL, not the body')
    if ((method === 'streamRawPredict') !== (body.stream === true)) return googleError(400, 'INVALID_ARGUMENT', 'stream must be set on streamRawPredict only')
    const thinking = thinkingFirstProblem(body)
    if (thinking) return claudeError(400, 'invalid_request_error', thinking)
    const answer = await fetch(`${options.anthropic.url}/messages`, { method: 'POST', headers, body: JSON.stringify({ ...rest, model: name }) })
    return new Response(answer.body, { status: answer.status, headers: { 'content-type': answer.headers.get('content-type') ?? 'application/json' } })
  }

  function google(name: string, method: string, call: RecordedCall): Response {
    const body = call.body as Json
    if (method === 'predict') {
      const instances: Json[] = body.instances ?? []
      if (name.startsWith('gemini-embedding') && instances.length !== 1)
        return googleError(400, 'INVALID_ARGUMENT', 'gemini-embedding-001 takes one instance per request')
      return Response.json({
        predictions: instances.map((i) => ({
          embeddings: {
            values: fakeVector(i.content, body.parameters?.outputDimensionality ?? 8),
            statistics: { token_count: Math.ceil(i.content.length / 3), truncated: false },
          },
        })),
        metadata: { billableCharacterCount: instances.reduce((sum, i) => sum + i.content.length, 0) },
      })
    }
    if (method === 'countTokens') {
      if (body.generateContentRequest) return googleError(400, 'INVALID_ARGUMENT', 'Vertex AI takes contents, not generateContentRequest')
      const problem = model.problem(body)
      return problem ? googleError(400, 'INVALID_ARGUMENT', problem) : Response.json({ totalTokens: model.promptTokens(body), totalBillableCharacters: 1 })
    }
    if (method !== 'generateContent' && method !== 'streamGenerateContent') return googleError(404, 'NOT_FOUND', `no method ${method}`)
    const problem = model.problem(body)
    if (problem) return googleError(400, 'INVALID_ARGUMENT', problem)
    const answer = model.answer(body, name)
    if (method === 'generateContent') return Response.json(answer)
    if (new URLSearchParams(call.search).get('alt') !== 'sse') return googleError(400, 'INVALID_ARGUMENT', 'alt=sse expected')
    return googleSse(model.events(answer))
  }

  const server = recordingServer(async (call) => {
    if (call.path === '/token' && call.method === 'POST') return token(call)
    const bearer = /^Bearer (.+)$/.exec(call.headers.get('authorization') ?? '')?.[1]
    if (!bearer || !live.has(bearer)) {
      return googleError(
        401,
        'UNAUTHENTICATED',
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
      )
    }
    const route = new RegExp(`^/v1/projects/${project}/locations/${location}/publishers/(google|anthropic)/models/([^/:]+):(\\w+)$`).exec(call.path)
    if (call.method !== 'POST' || !route) return googleError(404, 'NOT_FOUND', `no route ${call.method} ${call.path}`)
    const [, publisher, name, method] = route as unknown as [string, string, string, string]
    return publisher === 'anthropic' ? claude(name, method, call) : google(name, method, call)
  })

  return {
    url: `${server.origin}/v1`,
    tokenUri: `${server.origin}/token`,
    calls: server.calls,
    get tokenRequests() {
      return state.tokenRequests
    },
    refusedAssertions: state.refusedAssertions,
    model,
    trust(file) {
      trusted = file
    },
    revokeTokens: () => live.clear(),
    stop: server.stop,
  }
}
