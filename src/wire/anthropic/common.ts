/** What the translations between OpenAI chat completions and Anthropic Messages share, both ways. */
import type { Unsupported } from '../../errors'

/** Anthropic requires max_tokens; OpenAI callers usually omit it. */
export const DEFAULT_MAX_TOKENS = 4096

/** The tool through which a JSON answer is asked for (`response_format`); never shown to the caller. */
export const JSON_TOOL = 'chatgate_json_response'

/** Thinking budgets for OpenAI's `reasoning_effort`; `none` and `minimal` mean no thinking. */
export const THINKING_BUDGETS: ReadonlyMap<string, number> = new Map([
  ['low', 1024],
  ['medium', 4096],
  ['high', 16384],
  ['xhigh', 32768],
  ['max', 32768],
])

export const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp'])
export const DATA_URL = /^data:([^;,]+);base64,(.*)$/s
export const HTTP_URL = /^https?:\/\//i

export const cannot = (code: Unsupported['code'], param: string, message: string): Unsupported => ({ code, param, message })

/** What the answer's translation needs to know about how the request was translated. */
export interface RequestShape {
  /** The answer is wanted as JSON text through JSON_TOOL; `wrapped` when its schema was wrapped in `value`. */
  json: { wrapped: boolean } | null
}

/** Tool arguments as Anthropic's `input`; text that is not a JSON object is kept, not dropped, under `_raw_arguments`. */
export function toolInputOf(args: string): Record<string, unknown> {
  if (args.trim() === '') return {}
  try {
    const input = JSON.parse(args) as unknown
    if (typeof input === 'object' && input !== null && !Array.isArray(input)) return input as Record<string, unknown>
  } catch {}
  return { _raw_arguments: args }
}

/** Claude Code's attribution block: meaningful to Anthropic alone, and it would keep other upstreams' prefix caches cold. */
export const BILLING_HEADER = 'x-anthropic-billing-header:'
