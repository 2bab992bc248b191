/**
 * What the inbound side of the Gemini dialect (Gemini CLI, the Google GenAI SDK) needs beyond the
 * shared shapes of `types.ts`: the methods of `POST /v1beta/models/{model}:{method}`, and Google's
 * OpenAPI subset of a schema (`parameters`, `responseSchema`), which the pivot takes as JSON Schema.
 * Source: https://ai.google.dev/api/generate-content and https://ai.google.dev/api/caching#Schema.
 */

/** The methods a Gemini-native route serves: `{model}:{method}`. */
export const GEMINI_METHODS = ['generateContent', 'streamGenerateContent', 'countTokens'] as const

export type GeminiMethod = (typeof GEMINI_METHODS)[number]

/** `name:method` (one path segment, as the SDK writes it) split at its last colon; null when it has none. */
export function splitModelAction(segment: string): { name: string; method: string } | null {
  const colon = segment.lastIndexOf(':')
  if (colon <= 0) return null
  return { name: segment.slice(0, colon), method: segment.slice(colon + 1) }
}

/** Google's OpenAPI subset of a schema: upper-case types, `nullable`, `propertyOrdering`. */
export interface Schema {
  type?: string
  format?: string
  title?: string
  description?: string
  nullable?: boolean
  enum?: string[]
  items?: Schema
  properties?: Record<string, Schema>
  required?: string[]
  anyOf?: Schema[]
  propertyOrdering?: string[]
  [field: string]: unknown
}

/** Members of Google's Schema that have no JSON Schema meaning: left out. */
const NOT_JSON_SCHEMA = new Set(['nullable', 'propertyOrdering', 'example'])

/**
 * Google's OpenAPI subset as JSON Schema: types in lower case (`nullable` adds `"null"`), nested
 * schemas converted the same way, `propertyOrdering` and `example` left out; everything else as is.
 */
export function jsonSchemaOf(schema: Schema): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) {
    if (NOT_JSON_SCHEMA.has(key) || value === undefined) continue
    if (key === 'type' && typeof value === 'string') {
      const type = value.toLowerCase()
      if (type !== 'type_unspecified') out.type = schema.nullable === true ? [type, 'null'] : type
    } else if (key === 'items' && typeof value === 'object' && value !== null) {
      out.items = jsonSchemaOf(value as Schema)
    } else if (key === 'anyOf' && Array.isArray(value)) {
      out.anyOf = (value as Schema[]).map(jsonSchemaOf)
    } else if (key === 'properties' && typeof value === 'object' && value !== null) {
      out.properties = Object.fromEntries(Object.entries(value as Record<string, Schema>).map(([name, sub]) => [name, jsonSchemaOf(sub)]))
    } else {
      out[key] = value
    }
  }
  return out
}
