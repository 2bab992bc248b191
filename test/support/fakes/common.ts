/**
 * What the fake upstreams share: a recording HTTP server on 127.0.0.1, and a sample value for a
 * JSON Schema (what a model asked for structured output answers with, deterministically).
 */
import type { Server } from 'bun'

export interface RecordedCall {
  method: string
  /** The path without the query string. */
  path: string
  /** The query string, with its `?`, or ''. */
  search: string
  headers: Headers
  /** The parsed JSON body (null for a GET or a body that is not JSON). */
  body: any
  /** The body exactly as it arrived. */
  text: string
}

export interface RecordingServer {
  server: Server<undefined>
  /** `http://127.0.0.1:<port>` */
  origin: string
  calls: RecordedCall[]
  stop(): void
}

/** A Bun server on 127.0.0.1 (a free port) that records every request before `handle` answers it. */
export function recordingServer(handle: (call: RecordedCall) => Response | Promise<Response>): RecordingServer {
  const calls: RecordedCall[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const url = new URL(req.url)
      const text = req.method === 'GET' || req.method === 'HEAD' ? '' : await req.text()
      let body: unknown = null
      try {
        body = text === '' ? null : JSON.parse(text)
      } catch {
        body = null
      }
      const call: RecordedCall = { method: req.method, path: url.pathname, search: url.search, headers: req.headers, body, text }
      calls.push(call)
      return handle(call)
    },
  })
  return { server, origin: `http://127.0.0.1:${server.port}`, calls, stop: () => void server.stop(true) }
}

type Schema = Record<string, any>

/**
 * A value that satisfies `schema` (the subset structured-output schemas use: objects with their
 * properties, arrays, enums, consts, scalars, anyOf/oneOf, `$ref` into `$defs`/`definitions`).
 * Strings are `sample <name>`, numbers their minimum or 7, booleans true, arrays one item.
 */
export function sampleOf(schema: Schema, root: Schema = schema, name = 'value'): unknown {
  if (schema.$ref) {
    const path = String(schema.$ref).replace(/^#\//, '').split('/')
    let target: any = root
    for (const part of path) target = target?.[part]
    return sampleOf(target ?? {}, root, name)
  }
  if ('const' in schema) return schema.const
  if (Array.isArray(schema.enum)) return schema.enum[0]
  const options = schema.anyOf ?? schema.oneOf
  if (Array.isArray(options)) return sampleOf(options.find((s: Schema) => s.type !== 'null') ?? options[0], root, name)
  if (Array.isArray(schema.allOf)) return Object.assign({}, ...schema.allOf.map((s: Schema) => sampleOf(s, root, name)))
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== 'null') : schema.type
  switch (type) {
    case 'object':
    case undefined: {
      if (type === undefined && !schema.properties) return `sample ${name}`
      const out: Record<string, unknown> = {}
      for (const [key, sub] of Object.entries<Schema>(schema.properties ?? {})) out[key] = sampleOf(sub, root, key)
      return out
    }
    case 'array':
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => sampleOf(schema.items ?? {}, root, name))
    case 'string':
      return `sample ${name}`
    case 'integer':
    case 'number':
      return schema.minimum ?? schema.exclusiveMinimum ?? 7
    case 'boolean':
      return true
    case 'null':
      return null
    default:
      return `sample ${name}`
  }
}

/** Splits `text` in up to `parts` pieces (never empty ones), for the deltas of a stream. */
export function pieces(text: string, parts = 3): string[] {
  if (text.length <= 1) return [text]
  const size = Math.ceil(text.length / parts)
  const out: string[] = []
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size))
  return out
}

/** A rough token count (4 bytes a token), as a stand-in for a real tokenizer's. */
export const roughTokens = (text: string) => Math.max(1, Math.ceil(Buffer.byteLength(text) / 4))

/** A server-sent events body from a list of events (with their `event:` names when given). */
export function sseResponse(events: { event?: string; data: unknown }[], headers: Record<string, string> = {}): Response {
  const body = events.map((e) => `${e.event ? `event: ${e.event}\n` : ''}data: ${typeof e.data === 'string' ? e.data : JSON.stringify(e.data)}\n\n`).join('')
  return new Response(body, { headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', ...headers } })
}
