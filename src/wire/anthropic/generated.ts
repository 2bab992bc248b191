import type { StreamEvent } from './types'

const lengthOf = (value: unknown): number => (typeof value === 'string' ? value.length : 0)

/** Generated characters (text, thinking, tool input) in an Anthropic stream event: what a cut stream is charged for. */
export function eventGeneratedChars(event: StreamEvent): number {
  if (event.type !== 'content_block_delta') return 0
  const delta = (event as { delta?: Record<string, unknown> }).delta
  if (!delta) return 0
  return lengthOf(delta.text) + lengthOf(delta.partial_json) + lengthOf(delta.thinking)
}
