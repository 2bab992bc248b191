/**
 * A Signature Version 4 verifier, written from AWS's published algorithm and independent of the
 * signing library the gateway uses (@smithy/signature-v4): node:crypto and the steps of
 *   https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html
 * (canonical request: method, the path with each segment URI-encoded once more, as every service but
 * S3 wants, the sorted query, the signed headers' trimmed values, the payload's SHA-256; the string
 * to sign with the credential scope; the signing key derived date → region → service →
 * aws4_request). It answers what Bedrock would: null when the request is signed right, else the
 * error type and message Bedrock sends with its 403.
 */
import { createHash, createHmac } from 'node:crypto'

export interface AwsCredentials {
  accessKeyId: string
  secretAccessKey: string
  /** When set, the request must carry it as x-amz-security-token, signed. */
  sessionToken?: string
}

export interface SignedRequest {
  method: string
  /** The path as it arrived (percent-encoded once, as sent). */
  path: string
  /** The query string without its `?`. */
  query: string
  headers: Headers
  body: string
}

export interface SigV4Refusal {
  type: string
  message: string
}

const sha256 = (data: string) => createHash('sha256').update(data, 'utf8').digest('hex')
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data, 'utf8').digest()

/** RFC 3986 encoding as AWS specifies it: everything but A-Z a-z 0-9 - _ . ~ as %XX (uppercase hex). */
const uriEncode = (text: string) =>
  Array.from(new TextEncoder().encode(text), (byte) => {
    const char = String.fromCharCode(byte)
    return /[A-Za-z0-9\-_.~]/.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
  }).join('')

function canonicalQuery(query: string): string {
  if (query === '') return ''
  return query
    .split('&')
    .map((pair) => {
      const [key, value = ''] = pair.split('=')
      return [uriEncode(decodeURIComponent(key!)), uriEncode(decodeURIComponent(value))] as const
    })
    .sort(([a, x], [b, y]) => (a === b ? (x < y ? -1 : 1) : a < b ? -1 : 1))
    .map(([key, value]) => `${key}=${value}`)
    .join('&')
}

const SIGNATURE_MISMATCH =
  'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.'
const INVALID_TOKEN = 'The security token included in the request is invalid.'

const AUTHORIZATION = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/

/** Checks a request's SigV4 signature for `service` in `region` with the one key pair it knows. */
export function verifySigV4(request: SignedRequest, credentials: AwsCredentials, region: string, service: string, now = Date.now()): SigV4Refusal | null {
  const match = AUTHORIZATION.exec(request.headers.get('authorization') ?? '')
  if (!match) return { type: 'MissingAuthenticationTokenException', message: 'Missing Authentication Token' }
  const [, accessKeyId, date, scopeRegion, scopeService, signedHeaders, signature] = match
  if (accessKeyId !== credentials.accessKeyId) return { type: 'UnrecognizedClientException', message: INVALID_TOKEN }
  const token = request.headers.get('x-amz-security-token')
  if ((credentials.sessionToken ?? null) !== token) return { type: 'UnrecognizedClientException', message: INVALID_TOKEN }
  const amzDate = request.headers.get('x-amz-date') ?? ''
  if (!/^\d{8}T\d{6}Z$/.test(amzDate) || amzDate.slice(0, 8) !== date)
    return { type: 'IncompleteSignatureException', message: 'Date must be in ISO-8601 basic format' }
  const signedAt = Date.UTC(
    +amzDate.slice(0, 4),
    +amzDate.slice(4, 6) - 1,
    +amzDate.slice(6, 8),
    +amzDate.slice(9, 11),
    +amzDate.slice(11, 13),
    +amzDate.slice(13, 15),
  )
  if (Math.abs(now - signedAt) > 5 * 60_000) return { type: 'InvalidSignatureException', message: 'Signature expired' }
  if (scopeRegion !== region || scopeService !== service) {
    return { type: 'InvalidSignatureException', message: `Credential should be scoped to a valid region and service '${service}' in '${region}'` }
  }
  const names = signedHeaders!.split(';')
  const required = ['host', 'x-amz-date', ...(token ? ['x-amz-security-token'] : [])]
  if (required.some((name) => !names.includes(name))) return { type: 'InvalidSignatureException', message: SIGNATURE_MISMATCH }
  const payloadHash = sha256(request.body)
  const declared = request.headers.get('x-amz-content-sha256')
  if (declared !== null && declared !== payloadHash && declared !== 'UNSIGNED-PAYLOAD')
    return { type: 'InvalidSignatureException', message: SIGNATURE_MISMATCH }
  const canonicalHeaders = names.map((name) => `${name}:${(request.headers.get(name) ?? '').trim().replace(/\s+/g, ' ')}\n`).join('')
  const canonicalUri = request.path
    .split('/')
    .map((segment) => uriEncode(segment))
    .join('/')
  const canonical = [request.method, canonicalUri, canonicalQuery(request.query), canonicalHeaders, signedHeaders, payloadHash].join('\n')
  const scope = `${date}/${region}/${service}/aws4_request`
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n')
  const key = hmac(hmac(hmac(hmac(`AWS4${credentials.secretAccessKey}`, date!), region), service), 'aws4_request')
  return createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex') === signature
    ? null
    : { type: 'InvalidSignatureException', message: SIGNATURE_MISMATCH }
}
