/**
 * How a target dialect treats the top-level fields of a request it is asked to carry: translated,
 * dropped (a hint it has no room for, named in x-svc-dropped), fine at a neutral value, or else
 * unservable. Each dialect lists its own fields; the walk over the request is the same for all.
 */

/** Chat request fields that every dialect can serve at their neutral value, and at no other. */
export const CHAT_NEUTRAL_VALUES: ReadonlyMap<string, (value: unknown) => boolean> = new Map<string, (value: unknown) => boolean>([
  ['n', (v) => v === 1],
  ['logprobs', (v) => v === false],
  ['top_logprobs', (v) => v === 0],
  ['modalities', (v) => Array.isArray(v) && v.every((m) => m === 'text')],
])

/** Chat request fields that every target dialect translates: the conversation, tools, sampling, output, streaming. */
export const CHAT_CORE_FIELDS: readonly string[] = [
  'model',
  'messages',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_p',
  'stop',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'response_format',
  'reasoning_effort',
  'stream',
  'stream_options',
  'functions',
  'function_call',
]

/** Hints only OpenAI acts on (storage, caching, routing, tracking): every other dialect drops them, naming them in x-svc-dropped. */
export const OPENAI_ONLY_HINTS: readonly string[] = [
  'logit_bias',
  'store',
  'metadata',
  'service_tier',
  'prompt_cache_key',
  'prompt_cache_retention',
  'safety_identifier',
  'verbosity',
  'prediction',
]

export interface FieldPolicy {
  translated: ReadonlySet<string>
  dropped: ReadonlySet<string>
  neutral: ReadonlyMap<string, (value: unknown) => boolean>
}

/** The first field set in the request that the policy can neither translate, drop nor take at its neutral value; null when none. */
export function unservedField(request: object, policy: FieldPolicy): string | null {
  for (const [field, value] of Object.entries(request)) {
    if (value === null || value === undefined || policy.translated.has(field) || policy.dropped.has(field)) continue
    if (policy.neutral.get(field)?.(value)) continue
    return field
  }
  return null
}

/** The dropped fields the request sets, for x-svc-dropped. */
export const droppedFieldsOf = (request: object, dropped: ReadonlySet<string>): string[] =>
  [...dropped].filter((field) => (request as Record<string, unknown>)[field] != null)
