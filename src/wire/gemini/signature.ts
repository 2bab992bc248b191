/**
 * Thought signatures (https://ai.google.dev/gemini-api/docs/thought-signatures) in the pivot. Google
 * signs the model's reasoning on the part it was given with (the first function call of a step, or
 * the last part of a text answer), and wants each signature back on that same part next turn. The
 * pivot carries one as a `thinking_blocks` entry (the pivot's place for reasoning a caller must hand
 * back unchanged), whose signature names the part: `cg1.gemini.c<N>.<signature>` for the assistant
 * message's N-th tool call, `cg1.gemini.t.<signature>` for its text. Every inbound API carries such
 * blocks back: chat callers echo `thinking_blocks`, the Responses API seals them in
 * `encrypted_content`, Messages callers get a thinking block. The `cg1.` prefix marks the signature
 * as the gateway's, so an Anthropic target never gets it (src/wire/anthropic/signature.ts).
 */
import { GATEWAY_SIGNATURE_PREFIX } from '../pivot/gateway-signature'
import type { ThinkingBlock } from '../pivot/types'

const PREFIX = `${GATEWAY_SIGNATURE_PREFIX}gemini.`

/** Whether a signature is a Gemini thought signature the gateway wrapped. */
export const isGeminiSignature = (signature: string): boolean => signature.startsWith(PREFIX)

/** Where on an assistant message a signature goes back: on its N-th tool call, or on its text. */
export type SignatureAnchor = { call: number } | 'text'

/** A Gemini signature as a pivot thinking block, with the thought summary it came with ('' when none). */
export function signatureBlock(signature: string, anchor: SignatureAnchor, thinking = ''): ThinkingBlock {
  const where = anchor === 'text' ? 't' : `c${anchor.call}`
  return { type: 'thinking', thinking, signature: `${PREFIX}${where}.${signature}` }
}

export interface AnchoredSignature {
  anchor: SignatureAnchor
  signature: string
}

/** The Gemini signature a thinking block carries, with its anchor; null for any other block (Anthropic's, the gateway's own). */
export function signatureOf(block: ThinkingBlock): AnchoredSignature | null {
  if (block.type !== 'thinking' || typeof block.signature !== 'string' || !block.signature.startsWith(PREFIX)) return null
  const rest = block.signature.slice(PREFIX.length)
  const dot = rest.indexOf('.')
  if (dot === -1 || dot === rest.length - 1) return null
  const where = rest.slice(0, dot)
  const signature = rest.slice(dot + 1)
  if (where === 't') return { anchor: 'text', signature }
  const call = /^c(\d{1,4})$/.exec(where)
  return call ? { anchor: { call: Number(call[1]) }, signature } : null
}
