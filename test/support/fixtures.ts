import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import Ajv2020 from 'ajv/dist/2020'

const FIXTURES = join(import.meta.dir, '..', 'fixtures')

/** A JSON fixture: `{source, retrieved, description, ...data}`. */
export const fixture = <T = Record<string, any>>(path: string): T => JSON.parse(readFileSync(join(FIXTURES, path), 'utf8')) as T

/** A JSON fixture's text exactly as written (for byte-level comparisons). */
export const fixtureText = (path: string): string => readFileSync(join(FIXTURES, path), 'utf8')

export interface SseEvent {
  event: string | null
  data: string
}

/** An SSE transcript fixture as events, its `: source:` comment lines skipped. */
export function sseFixture(path: string): SseEvent[] {
  return fixtureText(path)
    .split(/\n\n+/)
    .map((block) => block.split('\n').filter((line) => line !== '' && !line.startsWith(':')))
    .filter((lines) => lines.length > 0)
    .map((lines) => ({
      event:
        lines
          .find((l) => l.startsWith('event:'))
          ?.slice(6)
          .trim() ?? null,
      data: lines
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart())
        .join('\n'),
    }))
}

/** The transcript as the upstream sends it: every event re-written, comments dropped. */
export const sseBody = (events: SseEvent[]) => events.map((e) => `${e.event ? `event: ${e.event}\n` : ''}data: ${e.data}\n\n`).join('')

// Formats (uri, unixtime) are annotations here: validated by type only.
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false })
ajv.addSchema(fixture('openai/chat-schemas.json'), 'openai')
const validator = (name: string) => ajv.getSchema(`openai#/$defs/${name}`)!

/** OpenAI's published schemas (test/fixtures/openai/chat-schemas.json): null when valid, else the errors. */
export function schemaErrors(
  name: 'CreateChatCompletionRequest' | 'CreateChatCompletionResponse' | 'CreateChatCompletionStreamResponse',
  value: unknown,
): string | null {
  const validate = validator(name)
  return validate(value) ? null : ajv.errorsText(validate.errors)
}
