import { anthropicKind } from './anthropic'
import { azureKind } from './azure'
import { bedrockKind } from './bedrock'
import { geminiKind } from './gemini'
import { mockKind } from './mock'
import { openaiKind } from './openai'
import type { ProviderKind } from './types'
import { vertexKind } from './vertex'

/** Every upstream kind this build implements. Adding one is a folder here and a line below; routes never change. */
export const providerKinds: ReadonlyMap<string, ProviderKind> = new Map(
  [mockKind, openaiKind, anthropicKind, bedrockKind, azureKind, geminiKind, vertexKind].map((kind) => [kind.kind, kind]),
)
