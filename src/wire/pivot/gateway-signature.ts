/**
 * Signatures on thinking blocks. The gateway's own (its HMAC over reasoning it translated, the
 * Gemini thought signatures it wraps) start with this prefix; Anthropic's never do. Every dialect
 * reads it here, so a provider never sends one upstream that would refuse it.
 */
export const GATEWAY_SIGNATURE_PREFIX = 'cg1.'

/** Whether a signature is the gateway's (valid or not). */
export const isGatewaySignature = (signature: unknown): boolean => typeof signature === 'string' && signature.startsWith(GATEWAY_SIGNATURE_PREFIX)

/** Whether Claude reads thinking with this signature (`''`: redacted thinking) as it is: Anthropic's own, not the gateway's. */
export const isClaudeSignature = (signature: string): boolean => !isGatewaySignature(signature)
