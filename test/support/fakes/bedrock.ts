/**
 * A fake Amazon Bedrock runtime, written from AWS's published references:
 *   - Converse: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html
 *     (request fields, Message / ContentBlock / ToolConfiguration / ReasoningContentBlock /
 *     OutputConfig shapes, stopReason values, TokenUsage with cacheRead/WriteInputTokens, the
 *     Errors section's types and statuses, sent as `x-amzn-ErrorType` with a `message` body)
 *   - ConverseStream: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html
 *     (messageStart, contentBlockStart/Delta/Stop, messageStop, metadata; exceptions in the stream)
 *   - The event-stream encoding (prelude of total length, headers length and prelude CRC32, string
 *     headers `:message-type`, `:event-type`, `:content-type`, the payload, the message CRC32):
 *     https://docs.aws.amazon.com/transcribe/latest/dg/streaming-setting-up.html#streaming-event-stream
 *     (encoded here with node:zlib's crc32, independently of the gateway's decoder)
 *   - InvokeModel: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModel.html
 *     with the Titan Text Embeddings V2 and Cohere Embed bodies of the Bedrock user guide
 *     (https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-titan-embed-text.html,
 *     https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-embed.html) and the
 *     X-Amzn-Bedrock-Input-Token-Count header
 *   - CountTokens: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_CountTokens.html
 *   - Claude's extended thinking on Bedrock (additionalModelRequestFields.thinking; signed reasoning
 *     must come back unchanged on a turn that used tools):
 *     https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-extended-thinking.html
 *     and Anthropic's "Preserving thinking blocks" (during tool use the thinking blocks go back whole
 *     and unmodified): https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#preserving-thinking-blocks.
 *     An assistant turn with toolUse but without its reasoningContent first is refused with Anthropic's
 *     own error, which Bedrock relays as a ValidationException prefixed "The model returned the
 *     following errors: " (`thinkingFirstProblem` below; the wording as Converse users report it, e.g.
 *     https://github.com/aws-samples/bedrock-engineer/issues/43).
 * Every request is authenticated as Bedrock does: a SigV4 signature checked by the independent
 * verifier of test/support/sigv4-verify.ts (written from the IAM user guide's algorithm), or a
 * Bedrock API key as a Bearer token; a wrong one gets Bedrock's own 403.
 *
 * It answers deterministically (`answer` below):
 *   - tools offered and no toolResult in the last user turn: a toolUse of the first tool (or of NAME
 *     for `[[call:NAME]]`, of the first two for `[[parallel]]`), with `toolInput(name)`;
 *   - outputConfig json_schema: one text block, a JSON value of that schema;
 *   - `[[stop:REASON]]`: text "stopped", with that stopReason;
 *   - otherwise: text with `marker`, naming the last tool result and the last user text;
 *   - Claude with thinking enabled: a signed reasoningContent block first.
 * Streams: `[[crc]]` corrupts the third message's CRC; `[[exception:TYPE]]` ends the stream with
 * that exception after the first text delta.
 */
import { createHmac } from 'node:crypto'
import { crc32 } from 'node:zlib'
import { type AwsCredentials, verifySigV4 } from '../sigv4-verify'
import { pieces, recordingServer, type RecordedCall, roughTokens, sampleOf } from './common'

export const BEDROCK_MARKER = 'chatgate-bedrock-final'
export const FAKE_AWS: AwsCredentials = { accessKeyId: 'AKIAFAKEBEDROCK00001', secretAccessKey: 'fake/secret/key/for/bedrock/tests/0000001' }
export const FAKE_BEDROCK_API_KEY = 'ABSKfakebedrockapikey0000'

export interface FakeBedrockOptions {
  region?: string
  credentials?: AwsCredentials
  apiKey?: string
  marker?: string
  toolInput?: (name: string) => Record<string, unknown>
  /** A response to give instead of the normal one (a failure the test wants), or null. */
  refuse?: (call: RecordedCall) => Response | null
}

export interface FakeBedrock {
  /** The base_url an upstream of kind "bedrock" takes. */
  url: string
  calls: RecordedCall[]
  /** Calls that were authenticated and reached an operation. */
  accepted: RecordedCall[]
  /** The 403s it sent for a wrong signature or key. */
  refusals: { type: string; message: string }[]
  /** The usage of each Converse answer it gave, in order (streamed ones too). */
  usages: Json[]
  stop(): void
}

type Json = Record<string, any>

/** Bedrock's error answer: the type in x-amzn-ErrorType, the reason in `message`. */
export function awsError(status: number, type: string, message: string, headers: Record<string, string> = {}): Response {
  return Response.json(
    { message },
    {
      status,
      headers: { 'x-amzn-ErrorType': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, 'x-amzn-RequestId': crypto.randomUUID(), ...headers },
    },
  )
}

const invalid = (message: string) => awsError(400, 'ValidationException', message)

// ---------------------------------------------------------------- event-stream encoding

function header(name: string, value: string): Buffer {
  const n = Buffer.from(name)
  const v = Buffer.from(value)
  const out = Buffer.alloc(1 + n.length + 1 + 2 + v.length)
  out.writeUInt8(n.length, 0)
  n.copy(out, 1)
  out.writeUInt8(7, 1 + n.length)
  out.writeUInt16BE(v.length, 2 + n.length)
  v.copy(out, 4 + n.length)
  return out
}

/** One event-stream message; `corrupt` flips its message CRC. */
export function eventMessage(headers: Record<string, string>, payload: unknown, corrupt = false): Buffer {
  const head = Buffer.concat(Object.entries(headers).map(([name, value]) => header(name, value)))
  const body = Buffer.from(JSON.stringify(payload))
  const total = 12 + head.length + body.length + 4
  const out = Buffer.alloc(total)
  out.writeUInt32BE(total, 0)
  out.writeUInt32BE(head.length, 4)
  out.writeUInt32BE(crc32(out.subarray(0, 8)), 8)
  head.copy(out, 12)
  body.copy(out, 12 + head.length)
  out.writeUInt32BE((crc32(out.subarray(0, total - 4)) ^ (corrupt ? 1 : 0)) >>> 0, total - 4)
  return out
}

/** An event with the padding field `p` real streams carry. */
export const event = (type: string, payload: Json, corrupt = false) =>
  eventMessage(
    { ':event-type': type, ':content-type': 'application/json', ':message-type': 'event' },
    { ...payload, p: 'abcdefghijklmnopqrstuvwxyzABCDEF' },
    corrupt,
  )

export const exception = (type: string, message: string) =>
  eventMessage({ ':exception-type': type, ':content-type': 'application/json', ':message-type': 'exception' }, { message })

// ---------------------------------------------------------------- checks

const TOP_FIELDS = new Set([
  'messages',
  'system',
  'inferenceConfig',
  'toolConfig',
  'guardrailConfig',
  'additionalModelRequestFields',
  'promptVariables',
  'additionalModelResponseFieldPaths',
  'requestMetadata',
  'performanceConfig',
  'outputConfig',
  'serviceTier',
])
const BLOCK_MEMBERS = new Set([
  'text',
  'image',
  'document',
  'video',
  'toolUse',
  'toolResult',
  'guardContent',
  'cachePoint',
  'reasoningContent',
  'citationsContent',
])

const isClaude = (model: string) => /anthropic\.claude/.test(model)

function blockProblem(block: Json, at: string): string | null {
  const members = Object.keys(block)
  if (members.length !== 1 || !BLOCK_MEMBERS.has(members[0]!)) return `The ContentBlock at ${at} must have exactly one member, got ${members.join(', ')}`
  if ('text' in block && (typeof block.text !== 'string' || block.text.trim() === ''))
    return `The text field in the ContentBlock object at ${at} is blank. Add text to the text field, and try again.`
  if (block.image && !['png', 'jpeg', 'gif', 'webp'].includes(block.image.format)) return `Invalid image format at ${at}`
  if (block.image && !/^[A-Za-z0-9+/]+=*$/.test(block.image.source?.bytes ?? '')) return `The image bytes at ${at} are not base64`
  if (block.document && !/^[A-Za-z0-9\-()[\]]+( [A-Za-z0-9\-()[\]]+)*$/.test(block.document.name ?? '')) return `Invalid document name at ${at}`
  return null
}

/** The Converse checks a translation could get wrong; the first problem's ValidationException message, or null. */
function converseProblem(model: string, body: Json, issued: Map<string, string>): string | null {
  const extra = Object.keys(body).find((key) => !TOP_FIELDS.has(key))
  if (extra) return `extraneous key [${extra}] is not permitted`
  const messages = body.messages as Json[]
  if (!Array.isArray(messages) || messages.length === 0)
    return 'A conversation must start with a user message. Try again with a conversation that starts with a user message.'
  if (messages[0]!.role !== 'user') return 'A conversation must start with a user message. Try again with a conversation that starts with a user message.'
  const thinking = body.additionalModelRequestFields?.thinking
  if (thinking && !isClaude(model)) return `The model ${model} does not support the thinking field`
  if (thinking) {
    if (!(body.inferenceConfig?.maxTokens > thinking.budget_tokens)) return '`max_tokens` must be greater than `thinking.budget_tokens`'
    if (body.inferenceConfig?.temperature !== undefined || body.inferenceConfig?.topP !== undefined)
      return '`temperature` and `top_p` may not be set with thinking'
  }
  let pending: string[] = []
  let usesTools = false
  for (const [i, message] of messages.entries()) {
    if (i > 0 && messages[i - 1]!.role === message.role) return 'A conversation must alternate between user and assistant roles.'
    if (!Array.isArray(message.content) || message.content.length === 0) return `The content field in the Message object at messages.${i} is empty.`
    for (const [j, block] of (message.content as Json[]).entries()) {
      const problem = blockProblem(block, `messages.${i}.content.${j}`)
      if (problem) return problem
      if (block.toolUse || block.toolResult) usesTools = true
      if (block.reasoningContent?.reasoningText) {
        const { text, signature } = block.reasoningContent.reasoningText
        if (!isClaude(model) || issued.get(signature) !== text) return `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`
      }
    }
    const ids = (message.content as Json[]).filter((b) => b.toolResult).map((b) => b.toolResult.toolUseId as string)
    if (message.role === 'user' && pending.length > 0 && pending.some((id) => !ids.includes(id)))
      return `Expected toolResult blocks at messages.${i}.content for the following Ids: ${pending.filter((id) => !ids.includes(id)).join(', ')}`
    if (message.role === 'user' && ids.some((id) => !pending.includes(id))) return `messages.${i}: a toolResult answers no toolUse of the previous turn`
    pending = message.role === 'assistant' ? (message.content as Json[]).filter((b) => b.toolUse).map((b) => b.toolUse.toolUseId) : []
    if (thinking && message.role === 'assistant' && pending.length > 0 && i === lastAssistantWithTools(messages)) {
      const problem = thinkingFirstProblem(message.content as Json[], i)
      if (problem) return problem
    }
  }
  if (usesTools && !body.toolConfig) return 'The toolConfig field must be defined when using toolUse and toolResult content blocks.'
  return null
}

/**
 * With thinking enabled, the assistant turn of the last tool call must start with its thinking (a
 * reasoningContent block): Anthropic's check, in its words (the block named as Anthropic names it,
 * `toolUse` as `tool_use`), as Bedrock relays it in a ValidationException.
 */
function thinkingFirstProblem(content: Json[], i: number): string | null {
  const first = content[0]!
  if (first.reasoningContent) return null
  const found = Object.keys(first)[0]!.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)
  return (
    `The model returned the following errors: messages.${i}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${found}\`. ` +
    'When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and ' +
    '`tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. ' +
    'Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking'
  )
}

function lastAssistantWithTools(messages: Json[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role === 'assistant' && messages[i]!.content.some((b: Json) => b.toolUse)) return i
  return -1
}

// ---------------------------------------------------------------- answers

const textOf = (content: Json[]) => content.map((block) => (typeof block.text === 'string' ? block.text : '')).join('')

function lastToolResult(messages: Json[]): string {
  const last = messages.at(-1)!
  const result = (last.content as Json[]).findLast((b) => b.toolResult)?.toolResult
  return result ? textOf(result.content ?? []) : ''
}

interface Answer {
  content: Json[]
  stopReason: string
  usage: Json
}

/** What it answers a valid Converse request with (see the rules at the top). */
function answer(body: Json, options: Required<Pick<FakeBedrockOptions, 'marker' | 'toolInput'>>, state: State): Answer {
  const messages = body.messages as Json[]
  const userText = textOf(messages.at(-1)!.content)
  const content: Json[] = []
  if (body.additionalModelRequestFields?.thinking) {
    const text = `thinking about ${userText || 'the tool result'}`
    const signature = `sig-${createHmac('sha256', 'fake-bedrock')
      .update(text + state.issued.size)
      .digest('base64url')}`
    state.issued.set(signature, text)
    content.push({ reasoningContent: { reasoningText: { text, signature } } })
  }
  const tools = ((body.toolConfig?.tools ?? []) as Json[]).filter((t) => t.toolSpec).map((t) => t.toolSpec.name as string)
  const answered = (messages.at(-1)!.content as Json[]).some((b) => b.toolResult)
  const forced = body.toolConfig?.toolChoice?.tool?.name as string | undefined
  const stop = /\[\[stop:([a-z_]+)\]\]/.exec(userText)?.[1]
  let stopReason = 'end_turn'
  if (stop) {
    content.push({ text: 'stopped' })
    stopReason = stop
  } else if (tools.length > 0 && !answered && body.toolConfig?.toolChoice) {
    const named = /\[\[call:([A-Za-z0-9_-]+)\]\]/.exec(userText)?.[1]
    const names = /\[\[parallel\]\]/.test(userText) ? tools.slice(0, 2) : [forced ?? (named && tools.includes(named) ? named : tools[0]!)]
    for (const name of names) content.push({ toolUse: { toolUseId: `tooluse_${++state.calls}${name.length}`, name, input: options.toolInput(name) } })
    stopReason = 'tool_use'
  } else if (body.outputConfig?.textFormat?.structure?.jsonSchema) {
    content.push({ text: JSON.stringify(sampleOf(JSON.parse(body.outputConfig.textFormat.structure.jsonSchema.schema))) })
  } else {
    content.push({ text: `${options.marker} tool=${lastToolResult(messages) || '-'} user=${userText || '-'}` })
  }
  const outputTokens = roughTokens(JSON.stringify(content))
  const usage: Json = { inputTokens: roughTokens(JSON.stringify([body.system ?? [], messages])), outputTokens }
  const cached = JSON.stringify(body).includes('"cachePoint"')
  if (cached) {
    const prefix = JSON.stringify(body.system ?? [])
    if (state.prefixes.has(prefix)) usage.cacheReadInputTokens = 100
    else usage.cacheWriteInputTokens = 100
    state.prefixes.add(prefix)
  }
  usage.totalTokens = usage.inputTokens + outputTokens + (usage.cacheReadInputTokens ?? 0) + (usage.cacheWriteInputTokens ?? 0)
  return { content, stopReason, usage }
}

/** The answer as ConverseStream events, in the reference's order. */
function streamOf(result: Answer, userText: string): Response {
  const out: Buffer[] = [event('messageStart', { role: 'assistant' })]
  const broken = /\[\[exception:([A-Za-z]+)\]\]/.exec(userText)?.[1]
  for (const [index, block] of result.content.entries()) {
    const at = { contentBlockIndex: index }
    if (block.toolUse) {
      out.push(event('contentBlockStart', { ...at, start: { toolUse: { toolUseId: block.toolUse.toolUseId, name: block.toolUse.name } } }))
      for (const input of pieces(JSON.stringify(block.toolUse.input))) out.push(event('contentBlockDelta', { ...at, delta: { toolUse: { input } } }))
    } else if (block.reasoningContent) {
      const { text, signature } = block.reasoningContent.reasoningText
      for (const piece of pieces(text)) out.push(event('contentBlockDelta', { ...at, delta: { reasoningContent: { text: piece } } }))
      out.push(event('contentBlockDelta', { ...at, delta: { reasoningContent: { signature } } }))
    } else {
      for (const piece of pieces(block.text)) {
        out.push(event('contentBlockDelta', { ...at, delta: { text: piece } }))
        if (broken) {
          out.push(exception(broken, `${broken} in the middle of the stream`))
          return new Response(Buffer.concat(out), { headers: { 'content-type': 'application/vnd.amazon.eventstream' } })
        }
      }
    }
    out.push(event('contentBlockStop', at))
  }
  out.push(event('messageStop', { stopReason: result.stopReason }))
  out.push(event('metadata', { usage: result.usage, metrics: { latencyMs: 12 } }))
  if (/\[\[crc\]\]/.test(userText)) out[2] = Buffer.from(eventMessageCorrupted(out[2]!))
  return new Response(Buffer.concat(out), { headers: { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-RequestId': crypto.randomUUID() } })
}

/** The same message with its last CRC byte flipped. */
function eventMessageCorrupted(message: Buffer): Buffer {
  const copy = Buffer.from(message)
  copy[copy.length - 1]! ^= 0xff
  return copy
}

// ---------------------------------------------------------------- embeddings and token counts

const vector = (text: string, size: number) => Array.from({ length: size }, (_, i) => (((text.length + 1) * (i + 3)) % 97) / 97)

function invoke(model: string, body: Json): Response {
  const counted = (n: number, payload: Json) =>
    Response.json(payload, { headers: { 'X-Amzn-Bedrock-Input-Token-Count': String(n), 'X-Amzn-Bedrock-Output-Token-Count': '0' } })
  if (/amazon\.titan-embed-text/.test(model)) {
    if (typeof body.inputText !== 'string')
      return invalid('Malformed input request: #: required key [inputText] not found, please reformat your input and try again.')
    if (body.dimensions !== undefined && ![256, 512, 1024].includes(body.dimensions))
      return invalid('Malformed input request: dimensions must be 256, 512 or 1024')
    const tokens = roughTokens(body.inputText)
    return counted(tokens, { embedding: vector(body.inputText, body.dimensions ?? 1024), inputTextTokenCount: tokens })
  }
  if (/cohere\.embed-/.test(model)) {
    if (!Array.isArray(body.texts) || typeof body.input_type !== 'string') return invalid('Malformed input request: texts and input_type are required')
    const vectors = (body.texts as string[]).map((text) => vector(text, 1024))
    const tokens = (body.texts as string[]).reduce((sum, text) => sum + roughTokens(text), 0)
    const embeddings = Array.isArray(body.embedding_types) ? { float: vectors } : vectors
    return counted(tokens, {
      id: crypto.randomUUID(),
      embeddings,
      response_type: Array.isArray(body.embedding_types) ? 'embeddings_by_type' : 'embeddings_floats',
      texts: body.texts,
    })
  }
  return invalid(`The model ${model} does not support InvokeModel with this body`)
}

function countTokens(model: string, body: Json): Response {
  if (!isClaude(model)) return invalid("The provided model doesn't support counting tokens.")
  const converse = body.input?.converse
  if (!converse || !Array.isArray(converse.messages)) return invalid('input.converse.messages is required')
  return Response.json({ inputTokens: roughTokens(JSON.stringify([converse.system ?? [], converse.messages])) + 3 })
}

// ---------------------------------------------------------------- the server

interface State {
  issued: Map<string, string>
  prefixes: Set<string>
  calls: number
}

export function fakeBedrock(options: FakeBedrockOptions = {}): FakeBedrock {
  const region = options.region ?? 'us-east-1'
  const credentials = options.credentials ?? FAKE_AWS
  const apiKey = options.apiKey ?? FAKE_BEDROCK_API_KEY
  const settings = { marker: options.marker ?? BEDROCK_MARKER, toolInput: options.toolInput ?? (() => ({ city: 'Boston' })) }
  const state: State = { issued: new Map(), prefixes: new Set(), calls: 0 }
  const accepted: RecordedCall[] = []
  const refusals: { type: string; message: string }[] = []
  const usages: Json[] = []

  function authenticate(call: RecordedCall): Response | null {
    const authorization = call.headers.get('authorization') ?? ''
    const refusal = authorization.startsWith('Bearer ')
      ? authorization.slice(7) === apiKey
        ? null
        : { type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' }
      : verifySigV4(
          { method: call.method, path: call.path, query: call.search.replace(/^\?/, ''), headers: call.headers, body: call.text },
          credentials,
          region,
          'bedrock',
        )
    if (!refusal) return null
    refusals.push(refusal)
    return awsError(403, refusal.type, refusal.message)
  }

  const server = recordingServer((call) => {
    const denied = authenticate(call)
    if (denied) return denied
    accepted.push(call)
    const refused = options.refuse?.(call)
    if (refused) return refused
    const match = /^\/model\/([^/]+)\/(converse|converse-stream|invoke|count-tokens)$/.exec(call.path)
    if (call.method !== 'POST' || !match) return awsError(404, 'UnknownOperationException', 'Unknown operation')
    const model = decodeURIComponent(match[1]!)
    if (call.body === null) return invalid('Malformed request body: not JSON')
    if (match[2] === 'invoke') return invoke(model, call.body)
    if (match[2] === 'count-tokens') return countTokens(model, call.body)
    const problem = converseProblem(model, call.body, state.issued)
    if (problem) return invalid(problem)
    const result = answer(call.body, settings, state)
    usages.push(result.usage)
    if (match[2] === 'converse-stream') return streamOf(result, textOf((call.body.messages as Json[]).at(-1)!.content))
    return Response.json(
      { output: { message: { role: 'assistant', content: result.content } }, stopReason: result.stopReason, usage: result.usage, metrics: { latencyMs: 12 } },
      { headers: { 'x-amzn-RequestId': crypto.randomUUID() } },
    )
  })
  return { url: server.origin, calls: server.calls, accepted, refusals, usages, stop: server.stop }
}
