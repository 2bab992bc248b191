import { createHmac, timingSafeEqual } from 'node:crypto'
import { GATEWAY_SIGNATURE_PREFIX, isGatewaySignature } from '../pivot/gateway-signature'
import type { MessagesRequest } from './types'

/**
 * Signs thinking the gateway made from another dialect's reasoning (an OpenAI-compatible target's
 * `reasoning_content`), so that it can travel as an Anthropic thinking block and be trusted when it
 * comes back: only thinking that carries a valid signature is turned back into that dialect's
 * reasoning. HMAC-SHA256 under the instance secret, base64url.
 */
export interface ThinkingSigner {
  sign(thinking: string): string
  /** Whether `signature` is this gateway's signature of `thinking`. */
  verify(thinking: string, signature: string): boolean
}

export function thinkingSigner(secret: string): ThinkingSigner {
  const mac = (thinking: string) => createHmac('sha256', secret).update(thinking).digest()
  return {
    sign: (thinking) => GATEWAY_SIGNATURE_PREFIX + mac(thinking).toString('base64url'),
    verify(thinking, signature) {
      if (!signature.startsWith(GATEWAY_SIGNATURE_PREFIX)) return false
      const given = Buffer.from(signature.slice(GATEWAY_SIGNATURE_PREFIX.length), 'base64url')
      const expected = mac(thinking)
      return given.length === expected.length && timingSafeEqual(given, expected)
    },
  }
}

/**
 * The request without thinking blocks the gateway signed (a conversation an OpenAI-shaped target
 * served before): for an Anthropic target, which would refuse them. The same object when it has none.
 */
export function withoutGatewayThinking(request: MessagesRequest): MessagesRequest {
  const gatewayThinking = (block: { type: string; signature?: unknown }) => block.type === 'thinking' && isGatewaySignature(block.signature)
  if (!request.messages.some((m) => Array.isArray(m.content) && m.content.some(gatewayThinking))) return request
  return {
    ...request,
    messages: request.messages.map((m) => (Array.isArray(m.content) ? { ...m, content: m.content.filter((block) => !gatewayThinking(block)) } : m)),
  }
}
