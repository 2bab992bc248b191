/**
 * kind = "bedrock" and kind = "azure" in the config: exactly the contract's fields, and a missing
 * field or unset variable refuses the config (at start and at every reload, which parse alike),
 * naming the field.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { parseGatewayConfig } from '../../../src/config/load'
import { GatewayError } from '../../../src/errors'
import { providerKinds } from '../../../src/providers'
import { TEST_MS } from '../../support/hooks'
import { codeBlocks } from '../../docs/markdown'

setDefaultTimeout(TEST_MS)

const ENV = { AK: 'AKIA', SK: 'secret', ST: 'token', KEY: 'key' }

function parse(upstream: Record<string, unknown>, env: Record<string, string> = ENV) {
  return parseGatewayConfig(
    { upstreams: { cloud: upstream }, aliases: { 'c/m': { targets: [{ upstream: 'cloud', model: 'm' }] } } },
    'test',
    providerKinds,
    undefined,
    env,
  )
}

/** The field a refused config names, and its message. */
function refusal(upstream: Record<string, unknown>, env?: Record<string, string>): [string | undefined, string] {
  try {
    parse(upstream, env)
  } catch (error) {
    if (error instanceof GatewayError) return [error.param, error.message]
    throw error
  }
  return [undefined, 'accepted']
}

describe('kind = "bedrock"', () => {
  const sigv4 = { kind: 'bedrock', region: 'us-east-1', access_key_id_env: 'AK', secret_access_key_env: 'SK' }

  test('SigV4 keys (with or without a session token) or an API key; base_url derived from the region when absent', () => {
    expect(parse(sigv4).upstreams[0]).toMatchObject({ kind: 'bedrock', region: 'us-east-1', accessKeyIdEnv: 'AK', secretAccessKeyEnv: 'SK', baseUrl: null })
    expect(parse({ ...sigv4, session_token_env: 'ST' }).upstreams[0]!.sessionTokenEnv).toBe('ST')
    expect(parse({ kind: 'bedrock', region: 'eu-west-1', api_key_env: 'KEY', base_url: 'https://vpce.example/' }).upstreams[0]!.baseUrl).toBe(
      'https://vpce.example',
    )
  })

  test('a missing field or unset variable is refused, naming the field', () => {
    expect(refusal({ ...sigv4, region: undefined })[0]).toBe('upstreams.cloud.region')
    expect(refusal({ kind: 'bedrock', region: 'us-east-1', access_key_id_env: 'AK' })[0]).toBe('upstreams.cloud.secret_access_key_env')
    expect(refusal({ kind: 'bedrock', region: 'us-east-1' })[0]).toBe('upstreams.cloud.access_key_id_env')
    expect(refusal(sigv4, { SK: 'x' })).toEqual(['upstreams.cloud.access_key_id_env', expect.stringContaining('AK is not set')])
    expect(refusal({ ...sigv4, session_token_env: 'NOPE' })[0]).toBe('upstreams.cloud.session_token_env')
    expect(refusal({ kind: 'bedrock', region: 'us-east-1', api_key_env: 'NOPE' })[0]).toBe('upstreams.cloud.api_key_env')
    expect(refusal({ ...sigv4, api_key_env: 'KEY' })[1]).toContain('not both')
  })

  test("another kind's fields are unknown here, and no native Responses", () => {
    expect(refusal({ ...sigv4, endpoint: 'https://x.openai.azure.com' })).toEqual([
      'upstreams.cloud.endpoint',
      expect.stringContaining('unknown field for kind "bedrock"'),
    ])
    expect(refusal({ ...sigv4, responses: 'native' })[0]).toBe('upstreams.cloud.responses')
  })
})

describe('kind = "azure"', () => {
  const azure = { kind: 'azure', endpoint: 'https://res.openai.azure.com', api_key_env: 'KEY' }

  test('endpoint and api_key_env; api_version optional; native Responses allowed', () => {
    expect(parse(azure).upstreams[0]).toMatchObject({ kind: 'azure', endpoint: 'https://res.openai.azure.com', apiKeyEnv: 'KEY' })
    expect(parse({ ...azure, api_version: '2024-10-21', responses: 'native' }).upstreams[0]).toMatchObject({ apiVersion: '2024-10-21', responses: 'native' })
  })

  test('a missing field or unset variable is refused, naming the field', () => {
    expect(refusal({ ...azure, endpoint: undefined })[0]).toBe('upstreams.cloud.endpoint')
    expect(refusal({ ...azure, api_key_env: undefined })[0]).toBe('upstreams.cloud.api_key_env')
    expect(refusal(azure, {})).toEqual(['upstreams.cloud.api_key_env', expect.stringContaining('KEY is not set')])
    expect(refusal({ ...azure, base_url: 'https://res.openai.azure.com/openai/v1' })[0]).toBe('upstreams.cloud.base_url')
    expect(refusal({ ...azure, region: 'eastus' })[0]).toBe('upstreams.cloud.region')
  })
})

describe('the config examples of docs/providers/', () => {
  test('each parses as a whole config, with the variables it names set', () => {
    for (const page of ['docs/providers/bedrock.md', 'docs/providers/azure.md']) {
      const blocks = codeBlocks(page).filter((block) => block.lang === 'toml')
      expect(blocks.length).toBeGreaterThan(0)
      for (const block of blocks) {
        const raw = Bun.TOML.parse(block.code)
        const env = Object.fromEntries([...block.code.matchAll(/_env = "([A-Z0-9_]+)"/g)].map((match) => [match[1]!, 'set']))
        const config = parseGatewayConfig(raw, page, providerKinds, undefined, env)
        expect(config.upstreams.length).toBeGreaterThan(1)
      }
    }
  })
})
