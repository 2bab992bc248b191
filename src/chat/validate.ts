import { GatewayError } from '../errors'
import type { ChatMessage } from './types'

/** Rules the schema cannot say: content may be null only on an assistant message carrying tool_calls. */
export function checkMessages(messages: ChatMessage[]): void {
  messages.forEach((message, i) => {
    if (message.content === null && !(message.role === 'assistant' && Array.isArray(message.tool_calls))) {
      throw new GatewayError(
        400,
        'invalid_request_error',
        `Invalid request: messages[${i}].content may be null only on an assistant message with tool_calls`,
        undefined,
        `messages.${i}.content`,
      )
    }
  })
}
