/**
 * Bedrock's transport, below the dialect: the event-stream framing as the gateway decodes it (from
 * messages encoded independently, as AWS's event-stream encoding reference lays them out), SigV4
 * as the gateway signs it (checked by the independent verifier written from
 * https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html),
 * and Bedrock's and Azure's error responses as the gateway's errors.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import { statusOf } from '../../src/http/errors'
import { azureError } from '../../src/providers/azure'
import { bedrockAuth } from '../../src/providers/bedrock/auth'
import { headerText, messageSplitter, payloadText } from '../../src/providers/bedrock/event-stream'
import { bedrockError } from '../../src/providers/bedrock/send'
import type { UpstreamSettings } from '../../src/config/types'
import { event, eventMessage, FAKE_AWS } from '../support/fakes/bedrock'
import { TEST_MS } from '../support/hooks'
import { verifySigV4 } from '../support/sigv4-verify'

setDefaultTimeout(TEST_MS)

describe('the event-stream framing', () => {
  const messages = [
    event('messageStart', { role: 'assistant' }),
    event('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'héllo' } }),
    event('metadata', { usage: { inputTokens: 1, outputTokens: 2 } }),
  ]
  const bytes = Buffer.concat(messages)

  test('messages cut at every byte boundary decode the same, headers and payloads', async () => {
    for (const size of [1, 7, 13, 64, bytes.length]) {
      const splitter = await messageSplitter(1 << 20)
      const out = []
      for (let at = 0; at < bytes.length; at += size) {
        const { messages: decoded, corrupt } = splitter.push(new Uint8Array(bytes.subarray(at, at + size)))
        expect(corrupt).toBeNull()
        out.push(...decoded)
      }
      expect(out.map((m) => headerText(m, ':event-type'))).toEqual(['messageStart', 'contentBlockDelta', 'metadata'])
      expect(JSON.parse(payloadText(out[1]!)).delta.text).toBe('héllo')
      expect(splitter.pending).toBe(false)
    }
  })

  test('a bad message CRC stops the decoding after the good messages before it', async () => {
    const broken = Buffer.concat([
      messages[0]!,
      eventMessage({ ':event-type': 'contentBlockDelta', ':message-type': 'event' }, { delta: { text: 'x' } }, true),
      messages[2]!,
    ])
    const { messages: decoded, corrupt } = (await messageSplitter(1 << 20)).push(new Uint8Array(broken))
    expect(decoded.map((m) => headerText(m, ':event-type'))).toEqual(['messageStart'])
    expect(corrupt?.message).toBe('an event-stream message failed its message CRC check')
  })

  test('a bad prelude CRC is caught before its length is trusted; so is a message over the bound', async () => {
    const bad = Buffer.from(messages[1]!)
    bad.writeUInt32BE(0x7fffffff, 0)
    expect((await messageSplitter(1 << 20)).push(new Uint8Array(bad)).corrupt?.message).toBe('an event-stream message failed its prelude CRC check')
    expect((await messageSplitter(40)).push(new Uint8Array(messages[1]!)).corrupt?.message).toBe('an event-stream message is larger than 40 bytes')
  })
})

describe('SigV4, signed by the gateway and checked independently', () => {
  const settings = (extra: Partial<UpstreamSettings> = {}) =>
    ({ name: 'aws', region: 'eu-west-1', accessKeyIdEnv: 'AK', secretAccessKeyEnv: 'SK', apiKeyEnv: null, ...extra }) as UpstreamSettings
  const env = { AK: FAKE_AWS.accessKeyId, SK: FAKE_AWS.secretAccessKey, ST: 'session-token-value' }
  const url = new URL('https://bedrock-runtime.eu-west-1.amazonaws.com/model/eu.anthropic.claude-sonnet-4-20250514-v1%3A0/converse')
  const body = '{"messages":[{"role":"user","content":[{"text":"hi"}]}]}'
  const check = (headers: Record<string, string>, sent = body, credentials = FAKE_AWS) =>
    verifySigV4(
      { method: 'POST', path: url.pathname, query: '', headers: new Headers({ ...headers, host: url.host }), body: sent },
      credentials,
      'eu-west-1',
      'bedrock',
    )

  test('a signed request verifies; another body, secret, region or service does not', async () => {
    const headers = await bedrockAuth(settings(), env).headers(url, body, 'application/json')
    expect(check(headers)).toBeNull()
    expect(check(headers, `${body} `)?.type).toBe('InvalidSignatureException')
    expect(check(headers, body, { ...FAKE_AWS, secretAccessKey: 'wrong' })?.type).toBe('InvalidSignatureException')
    const elsewhere = verifySigV4(
      { method: 'POST', path: url.pathname, query: '', headers: new Headers({ ...headers, host: url.host }), body },
      FAKE_AWS,
      'us-east-1',
      'bedrock',
    )
    expect(elsewhere?.message).toContain("'bedrock' in 'us-east-1'")
  })

  test('a session token travels signed as x-amz-security-token', async () => {
    const headers = await bedrockAuth(settings({ sessionTokenEnv: 'ST' }), env).headers(url, body, 'application/json')
    expect(headers['x-amz-security-token']).toBe('session-token-value')
    expect(check(headers, body, { ...FAKE_AWS, sessionToken: 'session-token-value' })).toBeNull()
    expect(check(headers, body, FAKE_AWS)?.type).toBe('UnrecognizedClientException')
  })

  test('a Bedrock API key is a Bearer token', async () => {
    const headers = await bedrockAuth(settings({ apiKeyEnv: 'KEY' }), { KEY: 'ABSK-key' }).headers(url, body, 'application/json')
    expect(headers).toEqual({ 'content-type': 'application/json', accept: 'application/json', authorization: 'Bearer ABSK-key' })
  })
})

describe('errors', () => {
  const aws = (type: string, extra: Record<string, string> = {}) =>
    new Headers({ 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, ...extra })
  const row = (error: ReturnType<typeof bedrockError>) => [statusOf(error), error.type, error.code, error.retry, error.details.retryAfterSeconds]

  test("Bedrock's x-amzn-ErrorType, mapped", () => {
    expect(row(bedrockError('b', 429, aws('ThrottlingException'), '{"message":"Too many requests"}'))).toEqual([
      429,
      'rate_limit_error',
      'upstream_rate_limited',
      'same',
      1,
    ])
    expect(row(bedrockError('b', 429, aws('ThrottlingException', { 'retry-after': '7' }), '{}'))).toEqual([
      429,
      'rate_limit_error',
      'upstream_rate_limited',
      'same',
      7,
    ])
    expect(row(bedrockError('b', 400, aws('ValidationException'), '{"message":"bad"}'))).toEqual([
      400,
      'invalid_request_error',
      'upstream_rejected',
      'none',
      undefined,
    ])
    expect(bedrockError('b', 400, aws('ValidationException'), '{"message":"bad"}').message).toBe('bad')
    expect(row(bedrockError('b', 403, aws('AccessDeniedException'), '{"message":"no access"}'))).toEqual([
      502,
      'upstream_error',
      'upstream_auth_failed',
      'other',
      undefined,
    ])
    expect(row(bedrockError('b', 403, new Headers(), '{"message":"Signature expired"}'))).toEqual([
      502,
      'upstream_error',
      'upstream_auth_failed',
      'other',
      undefined,
    ])
    expect(row(bedrockError('b', 429, aws('ModelNotReadyException'), '{}'))).toEqual([502, 'upstream_error', 'upstream_http_error', 'same', undefined])
    expect(row(bedrockError('b', 503, aws('ServiceUnavailableException'), '{}'))).toEqual([502, 'upstream_error', 'upstream_http_error', 'same', undefined])
    expect(row(bedrockError('b', 400, new Headers(), '{"__type":"com.amazon.coral.validate#ValidationException","message":"x"}'))[2]).toBe('upstream_rejected')
  })

  test("Azure's content filter keeps its code; a 401 or 403 is the gateway's credentials; retry-after-ms is honoured", () => {
    const filtered = azureError(
      'az',
      400,
      new Headers(),
      JSON.stringify({ error: { code: 'content_filter', message: 'filtered', innererror: { code: 'ResponsibleAIPolicyViolation' } } }),
    )
    expect(row(filtered)).toEqual([400, 'invalid_request_error', 'content_filter', 'none', undefined])
    expect(row(azureError('az', 401, new Headers(), '{"error":{"code":"401","message":"Access denied"}}'))).toEqual([
      502,
      'upstream_error',
      'upstream_auth_failed',
      'other',
      undefined,
    ])
    const throttled = azureError('az', 429, new Headers({ 'retry-after-ms': '1500', 'retry-after': '2' }), '{"error":{"code":"429","message":"slow down"}}')
    expect([...row(throttled), throttled.retryAfterMs]).toEqual([429, 'rate_limit_error', 'upstream_rate_limited', 'same', 2, 1500])
  })
})
