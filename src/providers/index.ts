import { anthropicKind } from './anthropic'
import { mockKind } from './mock'
import { openaiKind } from './openai'
import type { ProviderKind } from './types'

/** Every upstream kind this build implements. Adding one is a folder here and a line below; routes never change. */
export const providerKinds: ReadonlyMap<string, ProviderKind> = new Map([mockKind, openaiKind, anthropicKind].map((kind) => [kind.kind, kind]))
