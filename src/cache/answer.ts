import type { Usage } from '../wire/pivot/types'

type Json = Record<string, any>

/** Whether an answer of `api` calls tools (kept only where the alias opts in: a tool call usually depends on the world). */
export function callsTools(api: string, answer: Json): boolean {
  if (api === 'chat.completions') return ((answer.choices as Json[] | undefined) ?? []).some((choice) => (choice.message?.tool_calls?.length ?? 0) > 0)
  if (api === 'messages') return ((answer.content as Json[] | undefined) ?? []).some((block) => block.type === 'tool_use' || block.type === 'server_tool_use')
  if (api === 'responses') return ((answer.output as Json[] | undefined) ?? []).some((item) => typeof item.type === 'string' && item.type.endsWith('_call'))
  return false
}

/**
 * A streamed answer, put together from its events, as the JSON answer a request without `stream`
 * gets: a chat completion gains what only a JSON answer carries (each choice's `logprobs` and
 * `refusal`, and the usage, which a stream sends only when asked).
 */
export function answerOfStream(api: string, assembled: Json, usage: Usage | null): Json {
  if (api !== 'chat.completions') return assembled
  const choices = ((assembled.choices as Json[] | undefined) ?? []).map((choice) => ({
    ...choice,
    message: { refusal: null, ...choice.message },
    logprobs: choice.logprobs ?? null,
  }))
  return { ...assembled, choices, usage: assembled.usage ?? usage }
}
