import type { ChatMessage } from '../pivot/types'

const isSystem = (message: ChatMessage) => message.role === 'system' || message.role === 'developer'

/** Whether a system or developer message comes after the conversation started (a user, assistant or tool message). */
export function hasMidSystem(messages: readonly ChatMessage[]): boolean {
  let started = false
  for (const message of messages) {
    if (!isSystem(message)) started = true
    else if (started) return true
  }
  return false
}

const textOf = (content: ChatMessage['content']): string =>
  typeof content === 'string'
    ? content
    : (content ?? []).flatMap((part) => (part.type === 'text' && typeof part.text === 'string' ? [part.text] : [])).join('\n')

/**
 * The messages for an upstream whose server refuses a system message after the start of the
 * conversation (its `mid_system`): such a message becomes a user message wrapped in
 * `<system-reminder>` (`as_user`), or is appended to the leading system message (`fold`). Leading
 * system messages stay as they are.
 */
export function placeMidSystem(messages: readonly ChatMessage[], mode: 'as_user' | 'fold'): ChatMessage[] {
  const out: ChatMessage[] = []
  let leading: ChatMessage | null = null
  let started = false
  for (const message of messages) {
    if (!isSystem(message)) {
      started = true
      out.push(message)
    } else if (!started) {
      out.push(message)
      leading ??= message
    } else if (mode === 'as_user') {
      out.push({ role: 'user', content: `<system-reminder>\n${textOf(message.content)}\n</system-reminder>` })
    } else if (leading) {
      const merged: ChatMessage = { ...leading, content: `${textOf(leading.content)}\n\n${textOf(message.content)}` }
      out[out.indexOf(leading)] = merged
      leading = merged
    } else {
      out.unshift((leading = { role: 'system', content: textOf(message.content) }))
    }
  }
  return out
}
