/**
 * Reasoning a caller must hand back unchanged on its next turn (Anthropic's signed thinking blocks,
 * an OpenAI-compatible model's reasoning text), sealed so that it can travel through a client that
 * keeps no state (the Responses API's `encrypted_content`, which Codex sends back with `store:
 * false`). AES-256-GCM under a key derived from the instance secret: the caller can neither read nor
 * alter it, and a token that does not open (another instance's key, tampered, truncated, foreign)
 * is simply not restored.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'
import type { ThinkingBlock } from './types'

/** Tokens this gateway seals start with this; the version names the cipher and the payload's shape. */
export const SEALED_REASONING_PREFIX = 'cgr1.'

/** The pivot's reasoning of one assistant turn, as it is sealed. */
export interface SealedReasoning {
  /** Which kind of upstream made it (e.g. `anthropic`, `openai`): only a target of that kind can use signed blocks. */
  origin: string
  /** Anthropic's thinking blocks with their signatures (the pivot's `thinking_blocks`). */
  thinking_blocks?: ThinkingBlock[]
  /** Reasoning text (the pivot's `reasoning_content`). */
  reasoning_content?: string
}

export interface ReasoningSealer {
  seal(reasoning: SealedReasoning): string
  /** The reasoning a token holds, or null when it is not one this secret sealed intact. */
  unseal(token: string): SealedReasoning | null
}

const IV_BYTES = 12
const TAG_BYTES = 16
/** Bound to the version, so a token of another format never opens as this one. */
const AAD = Buffer.from(SEALED_REASONING_PREFIX)

/** A sealer under `secret` (the instance secret); its key is derived for this one use. */
export function reasoningSealer(secret: string): ReasoningSealer {
  const key = Buffer.from(hkdfSync('sha256', secret, 'chatgate', 'sealed reasoning v1', 32))
  return {
    seal(reasoning) {
      const iv = randomBytes(IV_BYTES)
      const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(AAD)
      const body = Buffer.concat([cipher.update(JSON.stringify(reasoning), 'utf8'), cipher.final()])
      return SEALED_REASONING_PREFIX + Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url')
    },
    unseal(token) {
      if (typeof token !== 'string' || !token.startsWith(SEALED_REASONING_PREFIX)) return null
      const raw = Buffer.from(token.slice(SEALED_REASONING_PREFIX.length), 'base64url')
      if (raw.length < IV_BYTES + TAG_BYTES) return null
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES)).setAAD(AAD)
        decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES))
        const text = Buffer.concat([decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]).toString('utf8')
        return sealedReasoningOf(JSON.parse(text))
      } catch {
        return null
      }
    },
  }
}

/** The payload's shape checked: a token that opened holds what this gateway sealed, but a version change must not crash a turn. */
function sealedReasoningOf(value: unknown): SealedReasoning | null {
  if (typeof value !== 'object' || value === null) return null
  const { origin, thinking_blocks, reasoning_content } = value as Record<string, unknown>
  if (typeof origin !== 'string') return null
  const out: SealedReasoning = { origin }
  if (Array.isArray(thinking_blocks)) out.thinking_blocks = thinking_blocks as ThinkingBlock[]
  if (typeof reasoning_content === 'string') out.reasoning_content = reasoning_content
  return out
}
