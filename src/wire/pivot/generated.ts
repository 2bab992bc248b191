import type { ChatCompletionChunk, StreamChunk } from './types'

/** The members of a chunk's delta whose string values are generated text: what a cut stream is charged for. */
const GENERATED_MEMBERS = ['"content":"', '"reasoning_content":"', '"arguments":"', '"refusal":"']

/** The length of the JSON string whose text starts at `from`, up to its closing quote (escapes counted as written). */
function stringLength(data: string, from: number): number {
  let at = from
  for (;;) {
    const quote = data.indexOf('"', at)
    if (quote === -1) return data.length - from
    let backslashes = 0
    while (data.charCodeAt(quote - 1 - backslashes) === 92) backslashes++
    if (backslashes % 2 === 0) return quote - from
    at = quote + 1
  }
}

/** The characters of every string value of a member (`"name":"`) in JSON text: a few searches, no parse. */
export function stringMemberChars(data: string, member: string): number {
  let chars = 0
  for (let at = data.indexOf(member); at !== -1; at = data.indexOf(member, at + member.length)) chars += stringLength(data, at + member.length)
  return chars
}

/** Generated characters in a chunk as an upstream wrote it. */
function rawGeneratedChars(data: string): number {
  let chars = 0
  for (const member of GENERATED_MEMBERS) chars += stringMemberChars(data, member)
  return chars
}

function chunkGeneratedChars(chunk: ChatCompletionChunk): number {
  let chars = 0
  for (const { delta } of chunk.choices) {
    if (!delta) continue
    chars += (delta.content?.length ?? 0) + (delta.reasoning_content?.length ?? 0) + (delta.refusal?.length ?? 0)
    for (const call of delta.tool_calls ?? []) chars += call.function?.arguments?.length ?? 0
  }
  return chars
}

/**
 * The characters of generated text (content, reasoning, refusals, tool arguments) in a batch of
 * chunks: a stream the caller cut is charged an estimate from it when no usage came.
 */
export function generatedChars(batch: readonly StreamChunk[]): number {
  let chars = 0
  for (const chunk of batch) chars += 'object' in chunk ? chunkGeneratedChars(chunk as ChatCompletionChunk) : rawGeneratedChars(chunk.data)
  return chars
}
