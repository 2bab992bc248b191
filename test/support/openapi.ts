/**
 * OpenAI's published OpenAPI document (test/fixtures/openai/openapi/, a dated copy; SOURCE.md names
 * its commit) as a JSON Schema validator: ajv, draft 2020-12. The document's schemas live under
 * `#/components/schemas/`, so the document is added whole and every `$ref` resolves inside it.
 * OpenAPI's `nullable: true` is no JSON Schema keyword: it is rewritten as "or null". Formats
 * (`uri`, `unixtime`) are annotations here; OpenAPI's own keywords (`discriminator`, `example`,
 * `x-*`) are ignored.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import Ajv2020 from 'ajv/dist/2020'
import type { ValidateFunction } from 'ajv'

export const OPENAPI_FILE = join(import.meta.dir, '..', 'fixtures', 'openai', 'openapi', 'openapi-2026-08-21.json')

/** A schema with OpenAPI's `nullable: true` read as JSON Schema: the same schema, or null. */
export function withNullable(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withNullable)
  if (typeof schema !== 'object' || schema === null) return schema
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) if (key !== 'nullable') out[key] = withNullable(value)
  if ((schema as { nullable?: unknown }).nullable !== true) return out
  return { anyOf: [out, { type: 'null' }] }
}

interface OpenApiDocument {
  components: { schemas: Record<string, unknown> }
}

let loaded: { ajv: Ajv2020; schemas: Record<string, unknown> } | null = null

function load() {
  if (loaded) return loaded
  const document = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as OpenApiDocument
  const schemas = withNullable(document.components.schemas) as Record<string, unknown>
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false })
  ajv.addSchema({ $id: 'openai', components: { schemas } })
  return (loaded = { ajv, schemas })
}

const compiled = new Map<string, ValidateFunction>()

/** The document's schema `name` (a key of components.schemas), compiled once. */
function validator(name: string): ValidateFunction {
  let validate = compiled.get(name)
  if (!validate) {
    const { ajv, schemas } = load()
    if (!(name in schemas)) throw new Error(`no schema "${name}" in the OpenAPI document`)
    validate = ajv.compile({ $ref: `openai#/components/schemas/${name}` })
    compiled.set(name, validate)
  }
  return validate
}

/** Null when `value` validates against the document's schema `name`, else ajv's errors as text. */
export function openapiErrors(name: string, value: unknown): string | null {
  const validate = validator(name)
  return validate(value) ? null : load().ajv.errorsText(validate.errors, { separator: '\n' })
}

let eventSchemas: Map<string, string> | null = null

/** The schema of each stream event type (`response.output_text.delta` → ResponseTextDeltaEvent), from the ResponseStreamEvent union. */
export function streamEventSchemas(): Map<string, string> {
  if (eventSchemas) return eventSchemas
  const { schemas } = load()
  const union = schemas.ResponseStreamEvent as { anyOf: { $ref: string }[] }
  eventSchemas = new Map()
  for (const { $ref } of union.anyOf) {
    const name = $ref.split('/').at(-1)!
    const type = (schemas[name] as { properties?: { type?: { enum?: string[] } } }).properties?.type?.enum?.[0]
    if (type) eventSchemas.set(type, name)
  }
  return eventSchemas
}

/** Null when a Responses stream event validates against its own schema (chosen by its `type`), else the errors. */
export function streamEventErrors(event: { type: string }): string | null {
  const name = streamEventSchemas().get(event.type)
  if (!name) return `no schema for the stream event type "${event.type}"`
  return openapiErrors(name, event)
}
