/**
 * What the request log keeps of a body: secrets replaced, then cut to size. Headers are never kept
 * (the user agent aside), so the caller's key and the gateway's upstream credentials, which travel
 * only in headers, never reach the log; inside bodies, members named like credentials, credentials
 * in URLs, and the configured `redact` paths are replaced by REDACTED before anything is stored.
 */

export const REDACTED = '[redacted]'

/** Members whose values are credentials wherever they appear (MCP tool headers, `authorization` fields...). */
const SECRET_MEMBERS = new Set(['authorization', 'proxy-authorization', 'x-api-key', 'api-key', 'api_key', 'apikey', 'x-goog-api-key', 'cookie', 'set-cookie'])

/** Query parameters that carry credentials in URLs (`?key=`, `?api-key=`, signed URLs' `sig`...). */
const SECRET_PARAMS =
  /^(?:key|api[-_]?key|x-goog-api-key|token|access[-_]?token|auth|authorization|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token|password|secret)$/i

/** A URL with its user name, password and credential-like query values replaced; other text as it is. */
export function redactUrl(text: string): string {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return text
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return text
  }
  let changed = false
  if (url.username !== '' || url.password !== '') {
    url.username = url.username === '' ? '' : REDACTED
    url.password = url.password === '' ? '' : REDACTED
    changed = true
  }
  for (const name of new Set(url.searchParams.keys())) {
    if (!SECRET_PARAMS.test(name)) continue
    url.searchParams.set(name, REDACTED)
    changed = true
  }
  return changed ? url.toString() : text
}

/** `metadata.secret` as its segments; `*` matches any member or element. */
export const redactPaths = (paths: readonly string[]): string[][] => paths.map((path) => path.split('.'))

/** Replaces, in place, the values at `path` (from segment `i` on). */
function redactPath(value: unknown, path: string[], i: number): void {
  if (value === null || typeof value !== 'object') return
  const segment = path[i]!
  const last = i === path.length - 1
  const container = value as Record<string, unknown>
  const names = segment === '*' ? Object.keys(container) : Object.hasOwn(container, segment) ? [segment] : []
  for (const name of names) {
    if (last) container[name] = REDACTED
    else redactPath(container[name], path, i + 1)
  }
}

/** URLs inside text (a message that names one): each is redacted on its own. */
const URLS = /[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi

/** Text with the credentials of every URL in it replaced. */
const redactUrls = (text: string): string => (text.includes('://') ? text.replace(URLS, redactUrl) : text)

/** Replaces credential-named members and credentials in URLs, in place, at any depth. */
function redactSecrets(value: unknown): unknown {
  if (typeof value === 'string') return redactUrls(value)
  if (value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = redactSecrets(value[i])
    return value
  }
  const object = value as Record<string, unknown>
  for (const name of Object.keys(object)) object[name] = SECRET_MEMBERS.has(name.toLowerCase()) ? REDACTED : redactSecrets(object[name])
  return object
}

/** A body's JSON text with its secrets and the `paths` replaced; text that is not JSON keeps only its URLs' credentials out. */
export function redactBody(text: string, paths: readonly string[][]): string {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return redactUrls(text)
  }
  for (const path of paths) redactPath(value, path, 0)
  return JSON.stringify(redactSecrets(value))
}

/** The text cut to `maxBytes` of UTF-8 (never inside a character), with a marker saying how long it was. */
export function cutBody(text: string, maxBytes: number): string {
  // Cheap first: a UTF-16 length is at most the UTF-8 size... and at least a third of it.
  if (text.length * 3 <= maxBytes) return text
  const bytes = Buffer.from(text)
  if (bytes.length <= maxBytes) return text
  let end = maxBytes
  // Back to the start of a character: continuation bytes are 10xxxxxx.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--
  return `${bytes.subarray(0, end).toString()}…[truncated: ${bytes.length} bytes in all]`
}
