/** The caller's JSON text, edited for an OpenAI-compatible upstream: every other byte as sent. */
import { applyEdits, type Edit, type JsonOutline, outlineJson, replacement } from '../json-text'

const INCLUDE_USAGE = '{"include_usage":true}'

/** The edit that makes `stream_options.include_usage` true, or null when it already is. */
function includeUsage(text: string, outline: JsonOutline): Edit | null {
  const options = outline.members?.get('stream_options')
  if (options === undefined) {
    const open = text.indexOf('{') + 1
    const empty = /^\s*\}/.test(text.slice(open))
    return { start: open, end: open, text: `"stream_options":${INCLUDE_USAGE}${empty ? '' : ','}` }
  }
  const value = text.slice(options.valueStart, options.valueEnd)
  if (!value.startsWith('{')) return { start: options.valueStart, end: options.valueEnd, text: INCLUDE_USAGE }
  const inner = outlineJson(value, Number.POSITIVE_INFINITY).members?.get('include_usage')
  if (inner === undefined) {
    const empty = /^\{\s*\}$/.test(value)
    return { start: options.valueStart + 1, end: options.valueStart + 1, text: `"include_usage":true${empty ? '' : ','}` }
  }
  if (value.slice(inner.valueStart, inner.valueEnd) === 'true') return null
  return { start: options.valueStart + inner.valueStart, end: options.valueStart + inner.valueEnd, text: 'true' }
}

/**
 * The body for an OpenAI-compatible upstream: the caller's text with only the top-level `model`
 * replaced, and for a stream `stream_options.include_usage` set (the gateway counts usage from the
 * last chunk; whether the caller sees that chunk is decided on the way back). Numbers, key order,
 * spacing and unknown fields are the caller's bytes: `"seed": 18446744073709551615` stays exactly that.
 */
export function upstreamBody(text: string, outline: JsonOutline, model: string, stream: boolean): string {
  const edits: Edit[] = []
  const member = outline.members?.get('model')
  if (member) edits.push(replacement(member, JSON.stringify(model)))
  const usage = stream ? includeUsage(text, outline) : null
  if (usage) edits.push(usage)
  return applyEdits(text, edits)
}
