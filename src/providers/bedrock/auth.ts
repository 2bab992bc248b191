/**
 * How requests to Bedrock are authenticated: signed with SigV4 (service `bedrock`, the target's
 * region; a session token, when there is one, travels as x-amz-security-token and is signed too),
 * or with a Bedrock API key as a Bearer token. The secrets are read once, from the variables the
 * config names; the config refuses to start when one is unset (see `checkBedrock` in index.ts).
 */
import type { UpstreamSettings } from '../../config/types'
import { notConfigured } from '../errors'
import type { ProviderContext } from '../types'
import { type AwsSdk, awsSdk } from './sdk'

export interface BedrockAuth {
  /** The headers of one request to `url` with `body`: its content type, what it accepts, and its credentials. */
  headers(url: URL, body: string, accept: string): Promise<Record<string, string>>
}

/** The secret a variable the config names holds, if it is set. */
const secretOf = (env: ProviderContext['env'], variable: string | undefined): string | undefined => (variable ? env[variable] : undefined)

export function bedrockAuth(settings: UpstreamSettings, env: ProviderContext['env']): BedrockAuth {
  const name = settings.name
  if (settings.apiKeyEnv) {
    const key = secretOf(env, settings.apiKeyEnv)
    return {
      async headers(_url, _body, accept) {
        if (!key) throw notConfigured(name, settings.apiKeyEnv!)
        return { 'content-type': 'application/json', accept, authorization: `Bearer ${key}` }
      },
    }
  }
  const accessKeyId = secretOf(env, settings.accessKeyIdEnv)
  const secretAccessKey = secretOf(env, settings.secretAccessKeyEnv)
  const sessionToken = secretOf(env, settings.sessionTokenEnv)
  const credentials = accessKeyId && secretAccessKey ? { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) } : null
  let signer: Promise<InstanceType<AwsSdk['SignatureV4']>> | null = null
  return {
    async headers(url, body, accept) {
      if (!credentials)
        throw notConfigured(name, !accessKeyId ? (settings.accessKeyIdEnv ?? 'access_key_id_env') : (settings.secretAccessKeyEnv ?? 'secret_access_key_env'))
      if (settings.sessionTokenEnv && !sessionToken) throw notConfigured(name, settings.sessionTokenEnv)
      signer ??= awsSdk().then(({ SignatureV4, Sha256 }) => new SignatureV4({ service: 'bedrock', region: settings.region!, credentials, sha256: Sha256 }))
      const signed = await (
        await signer
      ).sign({
        method: 'POST',
        protocol: url.protocol,
        hostname: url.hostname,
        ...(url.port ? { port: Number(url.port) } : {}),
        // Already percent-encoded once (a model id's `:`, a profile ARN's `/`): SigV4 encodes each segment again, as AWS does for every service but S3.
        path: url.pathname,
        query: {},
        headers: { host: url.host, 'content-type': 'application/json', accept },
        body,
      })
      // fetch sends the Host it signed (the URL's): a second one would be refused by some runtimes.
      const { host: _host, ...headers } = signed.headers
      return headers
    },
  }
}
