import { withTopLevelValue } from '../json-text'
import type { ChatCompletion } from '../pivot/types'

/**
 * A non-streaming completion's body for the caller, with `model` set to the alias. The upstream's own
 * text is relayed when possible (only the model swapped); otherwise the object is serialized.
 */
export function completionJson(completion: ChatCompletion, upstreamText: string | null, alias: string): string {
  if (upstreamText !== null && completion.usage && typeof completion.model === 'string') {
    const swapped = withTopLevelValue(upstreamText, 'model', JSON.stringify(completion.model), JSON.stringify(alias))
    if (swapped !== null) return swapped
  }
  completion.model = alias
  completion.usage ??= { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }
  return JSON.stringify(completion)
}
