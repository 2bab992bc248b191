/**
 * JSON text, read and edited without parsing it into objects: to bound a body's nesting before any
 * parse, and to change one top-level member of a body that is otherwise relayed byte for byte.
 * Pure functions over strings; no imports.
 */

/** Where one top-level member sits in the text: `"key": value`, value from `valueStart` to `valueEnd`. */
export interface Member {
  key: string
  keyStart: number
  valueStart: number
  /** One past the value's last character (trailing whitespace excluded). */
  valueEnd: number
}

/** A JSON text as sent, its parse, and where its top-level members sit in the text. */
export interface JsonBody {
  text: string
  value: unknown
  outline: JsonOutline
}

export interface JsonOutline {
  /** The top-level object's members by (decoded) key; null when the text is not an object. */
  members: Map<string, Member> | null
  /** The first top-level key that occurs twice (JSON.parse would keep the last), else null. */
  duplicate: string | null
  /** Whether the nesting went past the limit; scanning stopped there. */
  tooDeep: boolean
}

const QUOTE = 34
const BACKSLASH = 92
const COLON = 58
const COMMA = 44
const OPEN_BRACE = 123
const CLOSE_BRACE = 125
const OPEN_BRACKET = 91
const CLOSE_BRACKET = 93

const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 13

/** The index of the quote closing the string that opens at `start`, or -1. */
function stringEnd(text: string, start: number): number {
  let end = text.indexOf('"', start + 1)
  while (end !== -1) {
    let backslashes = 0
    for (let i = end - 1; text.charCodeAt(i) === BACKSLASH; i--) backslashes++
    if (backslashes % 2 === 0) return end
    end = text.indexOf('"', end + 1)
  }
  return -1
}

/** A JSON string literal's value; malformed escapes are left to the parse that follows to refuse. */
function decodeString(literal: string): string {
  try {
    return JSON.parse(literal) as string
  } catch {
    return literal
  }
}

/**
 * One linear pass over JSON text: its nesting depth against `maxDepth` (stopping as soon as it is
 * passed, before any parse could do superlinear work), and where each top-level member sits.
 * Strings are skipped with indexOf, so the cost is mostly in the structure, not the content.
 * Text that is not valid JSON gives an outline of no use; the parse that follows rejects it.
 */
export function outlineJson(text: string, maxDepth: number): JsonOutline {
  let depth = 0
  let members: Map<string, Member> | null = null
  let duplicate: string | null = null
  // Top level only: the key being read, and where its value starts.
  let key: string | null = null
  let keyStart = -1
  let valueStart = -1
  let expectKey = false

  const closeMember = (end: number) => {
    if (key === null || valueStart === -1 || members === null) return
    while (end > valueStart && isSpace(text.charCodeAt(end - 1))) end--
    if (members.has(key)) duplicate ??= key
    members.set(key, { key, keyStart, valueStart, valueEnd: end })
    key = null
    valueStart = -1
  }

  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      const end = stringEnd(text, i)
      if (end === -1) break
      if (depth === 1 && expectKey && members !== null) {
        const raw = text.slice(i + 1, end)
        key = raw.includes('\\') ? decodeString(text.slice(i, end + 1)) : raw
        keyStart = i
        expectKey = false
      }
      i = end
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (depth === 0) {
        if (c === OPEN_BRACE) members = new Map()
        expectKey = true
      }
      if (++depth > maxDepth) return { members, duplicate, tooDeep: true }
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      if (depth === 1) closeMember(i)
      depth--
    } else if (depth === 1) {
      if (c === COLON && key !== null && valueStart === -1) {
        let start = i + 1
        while (isSpace(text.charCodeAt(start))) start++
        valueStart = start
        // The value may begin with a bracket or quote: let the loop see it.
        i = start - 1
      } else if (c === COMMA) {
        closeMember(i)
        expectKey = true
      }
    }
  }
  return { members, duplicate, tooDeep: false }
}

/**
 * The member `"key": value` where `value` is the exact JSON text given, when the text holds exactly
 * one such member at any depth; else null. Only a real key can match: inside a string every quote is
 * escaped, so `"key"` followed by a colon never occurs there. A few indexOf calls, no allocation but
 * the result: the fast path for text from a trusted writer, whose layout the caller then verifies
 * no further (ambiguity falls back to outlineJson).
 */
export function uniqueMember(text: string, key: string, value: string): Member | null {
  const quotedKey = `"${key}"`
  let found: Member | null = null
  for (let at = text.indexOf(quotedKey); at !== -1; at = text.indexOf(quotedKey, at + quotedKey.length)) {
    let i = at + quotedKey.length
    while (isSpace(text.charCodeAt(i))) i++
    if (text.charCodeAt(i) !== COLON) continue
    i++
    while (isSpace(text.charCodeAt(i))) i++
    if (!text.startsWith(value, i)) continue
    if (found !== null) return null
    found = { key, keyStart: at, valueStart: i, valueEnd: i + value.length }
  }
  return found
}

/**
 * The value of `key` as JSON text, when the text holds exactly one `"key":` member (at any depth) and
 * its value is a string; else null. For learning how a trusted writer spells a value, cheaply.
 */
export function soleStringValue(text: string, key: string): string | null {
  const quotedKey = `"${key}"`
  let found: string | null = null
  for (let at = text.indexOf(quotedKey); at !== -1; at = text.indexOf(quotedKey, at + quotedKey.length)) {
    let i = at + quotedKey.length
    while (isSpace(text.charCodeAt(i))) i++
    if (text.charCodeAt(i) !== COLON) continue
    if (found !== null) return null
    i++
    while (isSpace(text.charCodeAt(i))) i++
    if (text.charCodeAt(i) !== QUOTE) return null
    const end = stringEnd(text, i)
    if (end === -1) return null
    found = text.slice(i, end + 1)
  }
  return found
}

/** A change to JSON text: the characters from `start` to `end` become `text`. */
export interface Edit {
  start: number
  end: number
  text: string
}

/**
 * Applies edits that do not overlap. The result is put together from pieces of the original text in
 * one pass, first edit first: editing an edited string would flatten it (a copy) at every step.
 */
export function applyEdits(text: string, edits: Edit[]): string {
  if (edits.length > 1) edits.sort((a, b) => a.start - b.start)
  let out = ''
  let from = 0
  for (const edit of edits) {
    out += text.slice(from, edit.start) + edit.text
    from = edit.end
  }
  return out + text.slice(from)
}

/** The edit that removes `member` from its object, with the comma that separated it from a neighbour. */
export function removal(text: string, member: Member): Edit {
  let before = member.keyStart - 1
  while (before >= 0 && isSpace(text.charCodeAt(before))) before--
  if (text.charCodeAt(before) === COMMA) return { start: before, end: member.valueEnd, text: '' }
  let after = member.valueEnd
  while (after < text.length && isSpace(text.charCodeAt(after))) after++
  return { start: member.keyStart, end: text.charCodeAt(after) === COMMA ? after + 1 : member.valueEnd, text: '' }
}

/** The edit that replaces `member`'s value with `value` (JSON text). */
export const replacement = (member: Member, value: string): Edit => ({ start: member.valueStart, end: member.valueEnd, text: value })

/**
 * `text` with the top-level member `key`, whose value is `current` (JSON text, known from a parse),
 * set to `value`, or null when that member cannot be located safely (missing, or the key written
 * twice at the top level). The one `"key": current` in the text is it when there is exactly one;
 * else a full outline decides, so a same-named key nested elsewhere is never the one edited.
 */
export function withTopLevelValue(text: string, key: string, current: string, value: string): string | null {
  let member = uniqueMember(text, key, current)
  if (member === null) {
    const { members, duplicate } = outlineJson(text, Number.POSITIVE_INFINITY)
    member = duplicate === null ? (members?.get(key) ?? null) : null
  }
  return member === null ? null : applyEdits(text, [replacement(member, value)])
}

/**
 * `text` with the member `key` of the object under the top-level member `parent` set to `value`
 * (JSON text), e.g. `response.model` in a Responses stream event; null when either cannot be located
 * safely (missing, not an object, or written twice).
 */
export function withNestedValue(text: string, parent: string, key: string, value: string): string | null {
  const outer = outlineJson(text, Number.POSITIVE_INFINITY)
  const holder = outer.duplicate === null ? outer.members?.get(parent) : undefined
  if (!holder) return null
  const inner = outlineJson(text.slice(holder.valueStart, holder.valueEnd), Number.POSITIVE_INFINITY)
  const member = inner.duplicate === null ? inner.members?.get(key) : undefined
  if (!member) return null
  return applyEdits(text, [{ start: holder.valueStart + member.valueStart, end: holder.valueStart + member.valueEnd, text: value }])
}
