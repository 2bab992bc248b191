/**
 * Span attributes from what the gateway knows of a request: the GenAI semantic conventions
 * (`gen_ai.*`, written out here: the semantic-conventions package marks them as moved to their own
 * repository) and the gateway's own (`chatgate.*`). docs/observability.md lists each one.
 */
import type { Attributes } from '@opentelemetry/api'
import { ATTR_SERVER_ADDRESS, ATTR_SERVER_PORT } from '@opentelemetry/semantic-conventions'
import type { Target } from '../../routing/table'
import type { RequestRecord } from '../request-record'

export const GEN_AI = {
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  finishReasons: 'gen_ai.response.finish_reasons',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  timeToFirstChunk: 'gen_ai.response.time_to_first_chunk',
  inputMessages: 'gen_ai.input.messages',
} as const

/** `gen_ai.provider.name` by upstream kind: the conventions' names where they have one. */
const PROVIDERS: Record<string, string> = {
  openai: 'openai',
  anthropic: 'anthropic',
  gemini: 'gcp.gemini',
  vertex: 'gcp.vertex_ai',
  bedrock: 'aws.bedrock',
  azure: 'azure.ai.openai',
}

/** `gen_ai.operation.name` from the inbound path: embeddings, Gemini's generateContent, token counts, else chat. */
export function operationOf(path: string): string {
  if (path.includes('embed')) return 'embeddings'
  if (path.includes('count_tokens') || path.includes('input_tokens') || path.includes(':countTokens')) return 'count_tokens'
  if (path.includes('enerateContent')) return 'generate_content'
  return 'chat'
}

/** Upstream host and port by base URL: parsed once, not per attempt. */
const addresses = new Map<string, { host: string; port: number } | null>()

/** The upstream's host and port, from its base URL (never the URL itself: it can carry a credential). */
function upstreamAddress(baseUrl: string | null): Attributes {
  if (baseUrl === null) return {}
  let address = addresses.get(baseUrl)
  if (address === undefined) {
    const url = URL.parse(baseUrl)
    address = url === null ? null : { host: url.hostname, port: url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port) }
    addresses.set(baseUrl, address)
  }
  return address === null ? {} : { [ATTR_SERVER_ADDRESS]: address.host, [ATTR_SERVER_PORT]: address.port }
}

/** A client span's attributes as its attempt starts. */
export function attemptAttributes(record: RequestRecord, target: Target, attempt: number): Attributes {
  const attributes = upstreamAddress(target.upstream.baseUrl)
  attributes[GEN_AI.operation] = operationOf(record.path)
  attributes[GEN_AI.provider] = PROVIDERS[target.upstream.kind] ?? `chatgate.${target.upstream.kind}`
  attributes[GEN_AI.requestModel] = target.model
  if (record.alias !== undefined) attributes['chatgate.alias'] = record.alias
  attributes['chatgate.upstream'] = target.upstream.name
  attributes['chatgate.attempt'] = attempt
  return attributes
}

/** What the upstream answered: on the client span of the attempt that gave the answer. */
export function answerAttributes(record: RequestRecord): Attributes {
  const attributes: Attributes = {}
  if (record.upstreamModel !== undefined) attributes[GEN_AI.responseModel] = record.upstreamModel
  if (record.responseId !== undefined) attributes[GEN_AI.responseId] = record.responseId
  if (record.finishReasons !== undefined && record.finishReasons.length > 0) attributes[GEN_AI.finishReasons] = record.finishReasons
  if (record.promptTokens !== undefined) attributes[GEN_AI.inputTokens] = record.promptTokens
  if (record.completionTokens !== undefined) attributes[GEN_AI.outputTokens] = record.completionTokens
  if (record.costNanos !== undefined) attributes['chatgate.cost_usd'] = record.costNanos / 1e9
  return attributes
}

/** The server span's attributes once the request is finished: who asked, for what, how it went, what it cost. */
export function requestAttributes(record: RequestRecord, captureContent: boolean): Attributes {
  const attributes: Attributes = {}
  if (record.api !== undefined) attributes['chatgate.api'] = record.api
  if (record.alias !== undefined) attributes['chatgate.alias'] = record.alias
  if (record.keyPrefix !== undefined) attributes['chatgate.key_prefix'] = record.keyPrefix
  if (record.tier !== undefined) attributes['chatgate.tier'] = record.tier
  if (record.upstream !== undefined) attributes['chatgate.upstream'] = record.upstream
  if (record.attempts !== undefined) attributes['chatgate.attempts'] = record.attempts
  if (record.costNanos !== undefined) attributes['chatgate.cost_usd'] = record.costNanos / 1e9
  if (record.usageEstimated) attributes['chatgate.usage_estimated'] = true
  if (record.cache !== undefined) attributes['chatgate.cache'] = record.cache
  if (record.cacheSavedNanos !== undefined) attributes['chatgate.cache_saved_usd'] = record.cacheSavedNanos / 1e9
  if (record.dropped !== undefined && record.dropped.length > 0) attributes['chatgate.dropped_fields'] = record.dropped
  if (record.ttfbMs !== undefined) attributes[GEN_AI.timeToFirstChunk] = record.ttfbMs / 1000
  if (captureContent && record.messages !== undefined) attributes[GEN_AI.inputMessages] = JSON.stringify(record.messages)
  return attributes
}
