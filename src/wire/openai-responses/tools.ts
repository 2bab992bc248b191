/**
 * The caller's tools both ways: Responses tools as pivot function tools on the way out, and the
 * pivot's tool calls named back as the caller's tools on the way back. Function tools keep their
 * name; a `custom` (freeform) tool becomes a function taking one string `input`; a `namespace`
 * tool's members are flattened to `<namespace>__<name>`. Hosted tools are not translated here:
 * they are listed for the exchange, which drops, refuses or maps them per target.
 */
import type * as OpenAI from '../pivot/types'
import type { CustomTool, FunctionTool, HostedToolSpec, InputItem, NamespaceTool, Tool, ToolChoice } from './types'

/** Between a namespace and a member's name in the flattened name: both are `[A-Za-z0-9_-]`, as pivot function names must be. */
export const NAMESPACE_SEPARATOR = '__'

/** What a pivot function name stands for on the caller's side. */
export interface ToolName {
  kind: 'function' | 'custom'
  name: string
  namespace?: string
}

/** Pivot function name → the caller's tool. */
export type ToolNames = Map<string, ToolName>

/** A hosted tool of the request, where it was sent (`tools.3`, `input.0.tools.1`), for the exchange to decide on. */
export interface HostedTool {
  type: string
  param: string
  tool: HostedToolSpec
}

/** Tools as the pivot takes them. */
export interface PivotTools {
  tools: OpenAI.FunctionTool[]
  names: ToolNames
  hosted: HostedTool[]
  /** A tool whose flattened name another, different tool already has (refused by cannot-serve.ts). */
  conflict: { param: string; name: string } | null
}

/** Where tools come from: the request's `tools`, then `additional_tools` items in conversation order. */
export interface ToolSource {
  tools: Tool[]
  /** The path of the list: `tools`, `input.2.tools`; `previous_response_id` for a rebuilt conversation's. */
  param: string
}

export const flatName = (namespace: string | undefined, name: string): string => (namespace ? `${namespace}${NAMESPACE_SEPARATOR}${name}` : name)

/** A freeform tool's grammar is given to the model in words: the pivot has no way to enforce it. */
function customInputDescription(tool: CustomTool): string {
  const format = tool.format
  if (format?.type === 'grammar') return `The raw input, following this ${format.syntax} grammar:\n${format.definition}`
  return 'The raw input.'
}

function pivotFunction(tool: FunctionTool | CustomTool, flat: string, namespace?: NamespaceTool): OpenAI.FunctionTool {
  const description = [namespace?.description, tool.description].filter((d): d is string => typeof d === 'string' && d !== '').join('\n\n')
  const fn: OpenAI.FunctionTool['function'] = { name: flat }
  if (description !== '') fn.description = description
  if (tool.type === 'custom') {
    fn.parameters = {
      type: 'object',
      properties: { input: { type: 'string', description: customInputDescription(tool) } },
      required: ['input'],
      additionalProperties: false,
    }
  } else {
    if (tool.parameters) fn.parameters = tool.parameters
    if (typeof tool.strict === 'boolean') fn.strict = tool.strict
  }
  return { type: 'function', function: fn }
}

const sameName = (a: ToolName, b: ToolName) => a.kind === b.kind && a.name === b.name && a.namespace === b.namespace

/** Every tool of the request in the pivot's form, with the names to restore and the hosted tools apart. */
export function pivotTools(sources: ToolSource[]): PivotTools {
  const out: PivotTools = { tools: [], names: new Map(), hosted: [], conflict: null }
  const add = (tool: FunctionTool | CustomTool, param: string, namespace?: NamespaceTool) => {
    const flat = flatName(namespace?.name, tool.name)
    const name: ToolName = { kind: tool.type === 'custom' ? 'custom' : 'function', name: tool.name, ...(namespace ? { namespace: namespace.name } : {}) }
    const known = out.names.get(flat)
    if (known) {
      // The same tool declared again (a later additional_tools item repeating it) is one tool.
      if (!sameName(known, name)) out.conflict ??= { param, name: flat }
      return
    }
    out.names.set(flat, name)
    out.tools.push(pivotFunction(tool, flat, namespace))
  }
  for (const source of sources) {
    for (const [i, tool] of source.tools.entries()) {
      const param = `${source.param}.${i}`
      if (tool.type === 'namespace') {
        const namespace = tool as NamespaceTool
        for (const [j, member] of (namespace.tools ?? []).entries()) add(member, `${param}.tools.${j}`, namespace)
      } else if (tool.type === 'function' || tool.type === 'custom') add(tool as FunctionTool | CustomTool, param)
      else out.hosted.push({ type: tool.type, param, tool: tool as HostedToolSpec })
    }
  }
  return out
}

/** The tool sources of a request: its `tools`, and its conversation's `additional_tools` items (history first). */
export function toolSources(tools: Tool[] | undefined, history: readonly InputItem[], input: readonly InputItem[]): ToolSource[] {
  const sources: ToolSource[] = [{ tools: tools ?? [], param: 'tools' }]
  for (const item of history) if (item.type === 'additional_tools') sources.push({ tools: item.tools ?? [], param: 'previous_response_id' })
  for (const [i, item] of input.entries()) if (item.type === 'additional_tools') sources.push({ tools: item.tools ?? [], param: `input.${i}.tools` })
  return sources
}

/** The caller's tool a pivot function name stands for; an unknown name is a plain function of that name. */
export const callerTool = (flat: string, names: ToolNames): ToolName => names.get(flat) ?? { kind: 'function', name: flat }

/**
 * The pivot name of a tool a tool_choice names: its flattened name, or the one namespace member of
 * that name when the choice names no namespace (ToolChoiceFunction has none).
 */
function chosenName(name: string, namespace: unknown, names: ToolNames): string {
  const flat = flatName(typeof namespace === 'string' ? namespace : undefined, name)
  if (names.has(flat)) return flat
  const members = [...names].filter(([, tool]) => tool.name === name)
  return members.length === 1 ? members[0]![0] : flat
}

/**
 * A Responses tool_choice in the pivot: the choice, and for `allowed_tools` the pivot names the model
 * may call (the tool list is narrowed to them, which every target can do). Undefined: not translated
 * (a hosted tool's choice; cannot-serve.ts refuses it).
 */
export function pivotToolChoice(choice: ToolChoice, names: ToolNames): { choice: OpenAI.ToolChoice; only?: Set<string> } | undefined {
  if (choice === 'auto' || choice === 'none' || choice === 'required') return { choice }
  if (typeof choice !== 'object' || choice === null) return undefined
  if ((choice.type === 'function' || choice.type === 'custom') && typeof choice.name === 'string') {
    return { choice: { type: 'function', function: { name: chosenName(choice.name, (choice as { namespace?: unknown }).namespace, names) } } }
  }
  if (choice.type === 'allowed_tools' && Array.isArray(choice.tools)) {
    const only = new Set<string>()
    for (const tool of choice.tools as { type?: unknown; name?: unknown; namespace?: unknown }[]) {
      if ((tool.type === 'function' || tool.type === 'custom') && typeof tool.name === 'string') only.add(chosenName(tool.name, tool.namespace, names))
    }
    return { choice: choice.mode === 'required' ? 'required' : 'auto', only }
  }
  return undefined
}
