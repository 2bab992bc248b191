/** What the translations between the pivot and Google's generateContent share. */
import type { Unsupported } from '../../errors'

/**
 * Thinking budgets for OpenAI's `reasoning_effort`, as Google maps them on its own OpenAI-compatible
 * endpoint (https://ai.google.dev/gemini-api/docs/openai: low 1K, medium 8K, high 24K; none turns
 * thinking off). `minimal` and `xhigh` extend the scale on either side.
 */
export const THINKING_BUDGETS: ReadonlyMap<string, number> = new Map([
  ['none', 0],
  ['minimal', 512],
  ['low', 1024],
  ['medium', 8192],
  ['high', 24576],
  ['xhigh', 32768],
  ['max', 32768],
])

export const DATA_URL = /^data:([^;,]+);base64,(.*)$/s
export const HTTP_URL = /^https?:\/\//i
/** Cloud Storage objects, which Vertex AI reads itself. */
export const GS_URL = /^gs:\/\//i

/**
 * Google's documented stand-in for a signature the gateway does not have (a function call another
 * model made, history from before): Gemini 3 refuses a function call of the current turn without one
 * (https://ai.google.dev/gemini-api/docs/thought-signatures, "Using signatures with other models").
 */
export const SKIP_SIGNATURE = 'skip_thought_signature_validator'

export const cannot = (code: Unsupported['code'], param: string, message: string): Unsupported => ({ code, param, message })

/** Media types by file extension, for a file URI that does not say its own. */
const MIME_BY_EXTENSION: Readonly<Record<string, string>> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  heic: 'image/heic',
  heif: 'image/heif',
  pdf: 'application/pdf',
  txt: 'text/plain',
  mp3: 'audio/mp3',
  wav: 'audio/wav',
  mp4: 'video/mp4',
}

/** The media type a URI's extension names, or undefined (Google then works it out itself). */
export function mimeOfUri(uri: string): string | undefined {
  const path = uri.split(/[?#]/, 1)[0] ?? ''
  const extension = /\.([A-Za-z0-9]+)$/.exec(path)?.[1]?.toLowerCase()
  return extension ? MIME_BY_EXTENSION[extension] : undefined
}
