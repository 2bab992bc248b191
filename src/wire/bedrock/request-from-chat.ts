/** A pivot (OpenAI chat) request as a Converse request: for Bedrock targets of every inbound dialect. */
import { invalidRequest } from '../../errors'
import { isGatewaySignature } from '../pivot/gateway-signature'
import type * as OpenAI from '../pivot/types'
import type * as Bedrock from './types'
import { DATA_URL, DEFAULT_MAX_TOKENS, DOCUMENT_FORMATS, IMAGE_FORMATS, isClaude, THINKING_BUDGETS, toolUseId } from './common'

const CACHE_POINT: Bedrock.ContentBlock = { cachePoint: { type: 'default' } }

/** A document name Converse accepts (alphanumerics, single spaces, hyphens, parentheses, brackets), unique within the request. */
function documentName(filename: string | undefined, taken: Set<string>): string {
  const base =
    (filename ?? '')
      .replace(/\.[A-Za-z0-9]{1,5}$/, '')
      .replace(/[^A-Za-z0-9\s\-()[\]]/g, '-')
      .replace(/\s+/g, ' ')
      .trim()
      .slice(0, 100) || 'document'
  let name = base
  for (let n = 2; taken.has(name); n++) name = `${base}-${n}`
  taken.add(name)
  return name
}

/** What building one request's blocks keeps track of: document names must be unique across it. */
interface Build {
  documents: Set<string>
}

function mediaBlock(part: OpenAI.ContentPart, build: Build): Bedrock.ContentBlock | null {
  if (part.type === 'image_url') {
    const data = DATA_URL.exec((part as OpenAI.ImageUrlPart).image_url.url)!
    return { image: { format: IMAGE_FORMATS.get(data[1]!.toLowerCase())!, source: { bytes: data[2]! } } }
  }
  const file = (part as OpenAI.FilePart).file
  const data = DATA_URL.exec(file.file_data!)!
  return {
    document: { format: DOCUMENT_FORMATS.get(data[1]!.toLowerCase())!, name: documentName(file.filename, build.documents), source: { bytes: data[2]! } },
  }
}

/** A part's blocks: its own, then a cache point when the part carries `cache_control` (as Anthropic-aware clients send it). */
function partBlocks(part: OpenAI.ContentPart, build: Build): Bedrock.ContentBlock[] {
  let block: Bedrock.ContentBlock | null = null
  if (part.type === 'text') block = { text: (part as OpenAI.TextPart).text }
  else if (part.type === 'refusal') block = { text: (part as OpenAI.RefusalPart).refusal }
  else if (part.type === 'image_url' || part.type === 'file') block = mediaBlock(part, build)
  // Converse refuses blank text blocks.
  if (block === null || block.text === '') return []
  const cache = (part as { cache_control?: unknown }).cache_control
  return typeof cache === 'object' && cache !== null ? [block, CACHE_POINT] : [block]
}

function contentBlocks(content: OpenAI.ChatMessage['content'], build: Build): Bedrock.ContentBlock[] {
  if (typeof content === 'string') return content.trim() === '' ? [] : [{ text: content }]
  if (!Array.isArray(content)) return []
  return content.flatMap((part) => partBlocks(part, build))
}

/** Tool-call arguments as the JSON object Converse wants; "" is no arguments; anything else that is not an object is the caller's error. */
function toolInput(args: string, param: string): Record<string, unknown> {
  if (args.trim() === '') return {}
  let input: unknown
  try {
    input = JSON.parse(args)
  } catch {
    throw invalidRequest(`Invalid request: ${param} is not valid JSON`, { param })
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw invalidRequest(`Invalid request: ${param} must be a JSON object`, { param })
  return input as Record<string, unknown>
}

/**
 * Signed reasoning goes back first and unchanged: Claude checks it on a turn that used tools.
 * Thinking the gateway signed came from another model, and other models take none back.
 */
function reasoningBlocks(message: OpenAI.ChatMessage, claude: boolean): Bedrock.ContentBlock[] {
  if (!claude) return []
  const blocks: Bedrock.ContentBlock[] = []
  for (const block of message.thinking_blocks ?? []) {
    if (block.type === 'redacted_thinking') blocks.push({ reasoningContent: { redactedContent: block.data } })
    else if (block.signature && !isGatewaySignature(block.signature))
      blocks.push({ reasoningContent: { reasoningText: { text: block.thinking, signature: block.signature } } })
  }
  return blocks
}

function assistantBlocks(message: OpenAI.ChatMessage, i: number, claude: boolean, build: Build): Bedrock.ContentBlock[] {
  const blocks = [...reasoningBlocks(message, claude), ...contentBlocks(message.content, build)]
  for (const [j, call] of (message.tool_calls ?? []).entries()) {
    const input = toolInput(call.function.arguments, `messages.${i}.tool_calls.${j}.function.arguments`)
    blocks.push({ toolUse: { toolUseId: toolUseId(call.id), name: call.function.name, input } })
  }
  if (message.function_call) {
    const input = toolInput(message.function_call.arguments, `messages.${i}.function_call.arguments`)
    blocks.push({ toolUse: { toolUseId: `fn_${i}`, name: message.function_call.name, input } })
  }
  return blocks
}

/** A tool message's text: tool results carry text only in OpenAI's format. */
const toolText = (content: OpenAI.ChatMessage['content']): string =>
  typeof content === 'string' ? content : (content ?? []).map((part) => (part.type === 'text' ? (part as OpenAI.TextPart).text : '')).join('')

function toolResult(message: OpenAI.ChatMessage, id: string): Bedrock.ContentBlock {
  const text = toolText(message.content)
  return { toolResult: { toolUseId: toolUseId(id), content: text === '' ? [] : [{ text }] } }
}

/**
 * OpenAI messages as Converse turns: system and developer messages go to `system` (Converse has no
 * system turn: a later one joins it too); tool results become `toolResult` blocks of a user turn,
 * consecutive ones and a user message right after them sharing one turn, results first (parallel
 * calls are answered together); neighbours of one role merge, since Converse wants them to alternate.
 */
function toTurns(messages: OpenAI.ChatMessage[], claude: boolean, build: Build): { system: Bedrock.SystemBlock[]; turns: Bedrock.Message[] } {
  const system: Bedrock.SystemBlock[] = []
  const turns: Bedrock.Message[] = []
  let lastFunctionCall = -1
  const push = (role: 'user' | 'assistant', blocks: Bedrock.ContentBlock[]) => {
    const previous = turns.at(-1)
    if (previous?.role === role) previous.content.push(...blocks)
    else turns.push({ role, content: blocks })
  }
  for (const [i, message] of messages.entries()) {
    switch (message.role) {
      case 'system':
      case 'developer':
        system.push(...(contentBlocks(message.content, build) as Bedrock.SystemBlock[]))
        break
      case 'assistant':
        if (message.function_call) lastFunctionCall = i
        push('assistant', assistantBlocks(message, i, claude, build))
        break
      case 'tool':
        push('user', [toolResult(message, message.tool_call_id ?? '')])
        break
      case 'function':
        push('user', [toolResult(message, `fn_${lastFunctionCall}`)])
        break
      default:
        push('user', contentBlocks(message.content, build))
    }
  }
  return { system, turns: turns.filter((turn) => turn.content.length > 0) }
}

function toolSpecs(request: OpenAI.ChatRequest): Bedrock.ToolConfig['tools'] {
  const specs: Bedrock.ToolConfig['tools'] = []
  const spec = (name: string, description: string | undefined, parameters: Record<string, unknown> | undefined) =>
    specs.push({ toolSpec: { name, ...(description ? { description } : {}), inputSchema: { json: parameters ?? { type: 'object', properties: {} } } } })
  for (const tool of (request.tools ?? []) as OpenAI.FunctionTool[]) spec(tool.function.name, tool.function.description, tool.function.parameters)
  for (const fn of request.functions ?? []) spec(fn.name, fn.description, fn.parameters)
  return specs
}

/** `none` has no Converse form: tools are then left out, unless the history uses them (Converse then needs them declared). */
function toolConfig(request: OpenAI.ChatRequest, turns: Bedrock.Message[]): Bedrock.ToolConfig | undefined {
  const tools = toolSpecs(request)
  if (tools.length === 0) return undefined
  const choice = request.tool_choice ?? request.function_call
  if (choice === 'none') {
    const used = turns.some((turn) => turn.content.some((block) => block.toolUse || block.toolResult))
    return used ? { tools } : undefined
  }
  if (choice === 'required') return { tools, toolChoice: { any: {} } }
  if (typeof choice === 'object' && choice !== null) {
    const name = 'function' in choice ? (choice as { function: { name: string } }).function.name : (choice as { name: string }).name
    return { tools, toolChoice: { tool: { name } } }
  }
  return { tools, toolChoice: { auto: {} } }
}

/** `response_format` as Converse's structured output (outputConfig.textFormat): the answer is text that follows the schema. */
function outputConfig(format: OpenAI.ResponseFormat | undefined): Bedrock.OutputConfig | undefined {
  if (!format || format.type === 'text') return undefined
  const spec = format.type === 'json_schema' ? format.json_schema : { name: 'response', schema: { type: 'object' } }
  const jsonSchema = {
    schema: JSON.stringify(spec.schema ?? { type: 'object' }),
    name: spec.name,
    ...(spec.description ? { description: spec.description } : {}),
  }
  return { textFormat: { type: 'json_schema', structure: { jsonSchema } } }
}

/** maxTokens, sampling and stop sequences; with Claude's thinking, maxTokens covers the budget too and sampling is not allowed. */
function inferenceConfig(request: OpenAI.ChatRequest, budget: number | undefined): Bedrock.InferenceConfig {
  const config: Bedrock.InferenceConfig = {}
  const asked = request.max_completion_tokens ?? request.max_tokens ?? undefined
  if (budget !== undefined) config.maxTokens = asked === undefined ? budget + DEFAULT_MAX_TOKENS : Math.max(asked, budget + 1024)
  else if (asked !== undefined) config.maxTokens = asked
  if (budget === undefined) {
    // Bedrock's models take temperatures in 0..1, OpenAI's range is 0..2.
    if (typeof request.temperature === 'number') config.temperature = Math.min(request.temperature, 1)
    if (typeof request.top_p === 'number') config.topP = request.top_p
  }
  if (typeof request.stop === 'string') config.stopSequences = [request.stop]
  else if (Array.isArray(request.stop) && request.stop.length > 0) config.stopSequences = request.stop
  return config
}

/**
 * A pivot request as a Converse request for `modelId` (which goes in the URL, not the body).
 * Assumes bedrockCannotServe found nothing; throws a 400 for history it cannot read (tool arguments
 * that are not a JSON object).
 */
export function toConverseRequest(request: OpenAI.ChatRequest, modelId: string): Bedrock.ConverseRequest {
  const claude = isClaude(modelId)
  const { system, turns } = toTurns(request.messages, claude, { documents: new Set() })
  const effort = request.reasoning_effort
  const budget = claude && typeof effort === 'string' ? THINKING_BUDGETS.get(effort) : undefined
  const body: Bedrock.ConverseRequest = { messages: turns }
  if (system.length > 0) body.system = system
  const inference = inferenceConfig(request, budget)
  if (Object.keys(inference).length > 0) body.inferenceConfig = inference
  const tools = toolConfig(request, turns)
  if (tools) body.toolConfig = tools
  const output = outputConfig(request.response_format)
  if (output) body.outputConfig = output
  // Claude's extended thinking is not one of Converse's common fields: it goes as the model's own.
  if (budget !== undefined) body.additionalModelRequestFields = { thinking: { type: 'enabled', budget_tokens: budget } }
  return body
}

/** The body of a CountTokens call for what a Converse request would send. */
export function toCountTokensRequest(converse: Bedrock.ConverseRequest): Bedrock.CountTokensRequest {
  const { messages, system, toolConfig: tools, additionalModelRequestFields } = converse
  return {
    input: {
      converse: {
        messages,
        ...(system ? { system } : {}),
        ...(tools ? { toolConfig: tools } : {}),
        ...(additionalModelRequestFields ? { additionalModelRequestFields } : {}),
      },
    },
  }
}
