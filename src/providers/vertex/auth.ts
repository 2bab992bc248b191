/**
 * Vertex AI's access tokens from a service account, by Google's OAuth 2.0 service-account flow
 * (https://developers.google.com/identity/protocols/oauth2/service-account): an RS256 JWT signed
 * with the account's private key (jose), `scope` cloud-platform, `aud` the account's `token_uri`,
 * exchanged there as a form (`grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=...`)
 * for a bearer token. One token per instance, kept until five minutes before it expires, and fetched
 * once at a time: a hundred requests that find none wait for the same one.
 */
import { createPrivateKey } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { importPKCS8, SignJWT } from 'jose'
import type { UpstreamSettings } from '../../config/types'
import { GatewayError } from '../../errors'
import { connectionLost, UpstreamError, upstreamMessage } from '../errors'

export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform'
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer'
/** A token is taken for this long before it expires no more. */
const EXPIRY_MARGIN_MS = 5 * 60_000
/** What a JWT asks for: an hour, Google's maximum. */
const ASSERTION_SECONDS = 3600

/** The members of a service-account key file the flow needs. */
export interface ServiceAccount {
  client_email: string
  private_key: string
  private_key_id?: string
  token_uri: string
}

/** The account in a key file, or what is wrong with it (unreadable, not JSON, a member missing, a key that does not parse). */
export function readServiceAccount(path: string): ServiceAccount | string {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    return `cannot read the service-account file ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`
  }
  let account: Partial<ServiceAccount> & { type?: unknown }
  try {
    account = JSON.parse(text) as typeof account
  } catch {
    return `the service-account file ${path} is not JSON`
  }
  for (const member of ['client_email', 'private_key', 'token_uri'] as const) {
    if (typeof account[member] !== 'string' || account[member] === '') return `the service-account file ${path} has no ${member}`
  }
  try {
    createPrivateKey(account.private_key!)
  } catch {
    return `the private_key of the service-account file ${path} is not a PEM private key`
  }
  return account as ServiceAccount
}

/** The service-account file the settings name, or the problem naming the field (for the config check at start and reload). */
export function accountProblem(settings: UpstreamSettings, env: Readonly<Record<string, string | undefined>>): { field: string; message: string } | null {
  const variable = settings.credentialsFileEnv
  if (!variable) return { field: 'credentials_file_env', message: `required for kind "${settings.kind}"` }
  const path = env[variable]
  if (!path) return { field: 'credentials_file_env', message: `the environment variable ${variable} is not set` }
  const account = readServiceAccount(path)
  return typeof account === 'string' ? { field: 'credentials_file_env', message: account } : null
}

const authFailed = (upstream: string, detail: string) =>
  // Another target may still serve; this one will not until its credentials are fixed.
  new UpstreamError('upstream_error', `Upstream "${upstream}" could not get an access token: ${detail}`, { retry: 'other', code: 'upstream_auth_failed' })

/** The signed assertion the token endpoint takes. */
export async function signedAssertion(account: ServiceAccount, key: CryptoKey, nowSeconds: number): Promise<string> {
  return new SignJWT({ scope: CLOUD_PLATFORM_SCOPE })
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT', ...(account.private_key_id ? { kid: account.private_key_id } : {}) })
    .setIssuer(account.client_email)
    .setAudience(account.token_uri)
    .setIssuedAt(nowSeconds)
    .setExpirationTime(nowSeconds + ASSERTION_SECONDS)
    .sign(key)
}

/** Resolves with the promise, or rejects with the signal's reason once it aborts (the shared fetch goes on for the others). */
function until<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error)
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(error as Error)
      },
    )
  })
}

/** One instance's token for one service account. */
export class AccessTokens {
  private token: { value: string; renewAt: number } | null = null
  private pending: Promise<string> | null = null
  private key: Promise<CryptoKey> | null = null

  constructor(
    private readonly upstream: string,
    /** The account, read when first needed (the config check read it at start). */
    private readonly account: () => ServiceAccount | string,
    /** How long a token request may take. */
    private readonly timeoutMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** A valid token: the kept one, the one being fetched, or a new one. */
  get(signal: AbortSignal): Promise<string> {
    if (this.token && this.now() < this.token.renewAt) return Promise.resolve(this.token.value)
    this.pending ??= this.fetchToken().finally(() => {
      this.pending = null
    })
    return until(this.pending, signal)
  }

  /** Vertex AI refused `token` (401): it is not used again. A newer one, or one being fetched, stays. */
  invalidate(token: string): void {
    if (this.token?.value === token) this.token = null
  }

  private async fetchToken(): Promise<string> {
    const account = this.account()
    if (typeof account === 'string') throw authFailed(this.upstream, account)
    this.key ??= importPKCS8(account.private_key, 'RS256')
    let assertion: string
    try {
      assertion = await signedAssertion(account, await this.key, Math.floor(this.now() / 1000))
    } catch {
      this.key = null
      throw authFailed(this.upstream, 'the private key cannot sign')
    }
    let response: Response
    try {
      response = await fetch(account.token_uri, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams({ grant_type: JWT_BEARER, assertion }).toString(),
        signal: AbortSignal.timeout(this.timeoutMs),
      })
    } catch (error) {
      if (error instanceof GatewayError) throw error
      throw connectionLost(this.upstream, 'the token endpoint could not be reached')
    }
    const text = await response.text()
    if (response.status >= 500) throw connectionLost(this.upstream, `the token endpoint failed with HTTP ${response.status}`)
    if (!response.ok) throw authFailed(this.upstream, `${response.status} ${upstreamMessage(text)}`)
    let body: { access_token?: unknown; expires_in?: unknown }
    try {
      body = JSON.parse(text) as typeof body
    } catch {
      throw authFailed(this.upstream, 'the token endpoint answered no JSON')
    }
    if (typeof body.access_token !== 'string' || body.access_token === '') throw authFailed(this.upstream, 'the token endpoint answered no access_token')
    const lifetimeMs = (typeof body.expires_in === 'number' ? body.expires_in : 3600) * 1000
    this.token = { value: body.access_token, renewAt: this.now() + lifetimeMs - EXPIRY_MARGIN_MS }
    return body.access_token
  }
}
