import type { ModelRecord } from '../routing/table'
import { anthropicModel } from '../wire/anthropic/models'

/** An alias's record in the caller's dialect: Anthropic's when it sends `anthropic-version`, else OpenAI's. */
export const modelRecord = (model: ModelRecord, request: Request) => (request.headers.has('anthropic-version') ? anthropicModel(model) : model)
