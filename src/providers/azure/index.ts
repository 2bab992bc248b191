/**
 * Azure OpenAI: OpenAI's API on a resource of one's own (learn.microsoft.com/azure/ai-foundry/openai/reference).
 * The body is handled as for the openai kind (the caller's text, the model replaced); what differs is
 * where it goes, the `api-key` header, and errors: a content-filter refusal keeps its code.
 */
import type { UpstreamSettings } from '../../config/types'
import { UpstreamError, upstreamHttpError } from '../errors'
import { upstreamHeaders } from '../http'
import { openaiCompatible, type OpenAIEndpoints } from '../openai/compatible'
import { nativeResponsesApi } from '../openai/responses'
import { sendWith } from '../http'
import type { Provider, ProviderContext, ProviderKind } from '../types'

/** Azure's error body: OpenAI's shape, with an `innererror` naming the content filter's verdict. */
function errorOf(text: string): { message?: string; code?: string; innerCode?: string } {
  try {
    const error = (JSON.parse(text) as { error?: { message?: unknown; code?: unknown; innererror?: { code?: unknown } } }).error
    return {
      message: typeof error?.message === 'string' ? error.message : undefined,
      code: typeof error?.code === 'string' ? error.code : undefined,
      innerCode: typeof error?.innererror?.code === 'string' ? error.innererror.code : undefined,
    }
  } catch {
    return {}
  }
}

/**
 * Azure's errors: a prompt its content filter refused (400 `content_filter`, inner
 * `ResponsibleAIPolicyViolation`) stays a 400 with code `content_filter`; a 401 or 403 (a wrong key,
 * a network rule) is the gateway's credentials, failed over but never retried on this target;
 * the rest as for any OpenAI-shaped upstream (`retry-after-ms` honoured).
 */
export function azureError(upstream: string, status: number, headers: Headers, text: string): UpstreamError {
  const error = errorOf(text)
  if (status === 400 && (error.code === 'content_filter' || error.innerCode === 'ResponsibleAIPolicyViolation')) {
    return new UpstreamError('invalid_request_error', error.message ?? 'The request was refused by the content filter', {
      retry: 'none',
      code: 'content_filter',
      status: 400,
    })
  }
  return upstreamHttpError(upstream, status, headers, text)
}

// An error body too large to read is mapped as an empty one: its status still decides.
const sendAzure = sendWith((upstream, status, headers, text) => azureError(upstream, status, headers, text ?? ''))

/** A URL under the resource, with the api-version beside any query the path brings (`<id>/input_items?limit=2`). */
function resourceUrl(endpoint: string, path: string, apiVersion: string | undefined): string {
  const url = new URL(`${endpoint}/openai/${path}`)
  if (apiVersion) url.searchParams.set('api-version', apiVersion)
  return url.toString()
}

/**
 * Where each call goes: the v1 API (`/openai/v1/...`, the deployment named by the body's model)
 * unless `api_version` is set, then the deployment's own path with that api-version.
 */
function endpointsOf(settings: UpstreamSettings): OpenAIEndpoints & { responses(path: string): string } {
  const endpoint = settings.endpoint!.replace(/\/+$/, '')
  const version = settings.apiVersion
  const v1 = (path: string) => resourceUrl(endpoint, `v1/${path}`, undefined)
  const deployment = (model: string, path: string) => resourceUrl(endpoint, `deployments/${encodeURIComponent(model)}/${path}`, version)
  const responsesPath = (path: string) => (path === '' ? 'responses' : `responses/${path}`)
  return version
    ? {
        chat: (model) => deployment(model, 'chat/completions'),
        embeddings: (model) => deployment(model, 'embeddings'),
        responses: (path) => resourceUrl(endpoint, responsesPath(path), version),
      }
    : { chat: () => v1('chat/completions'), embeddings: () => v1('embeddings'), responses: (path) => v1(responsesPath(path)) }
}

function createAzureProvider(settings: UpstreamSettings, context: ProviderContext): Provider {
  const name = settings.name
  const endpoints = endpointsOf(settings)
  const headers = upstreamHeaders(settings, context.env, (secret) => ({ 'api-key': secret }))
  return {
    ...openaiCompatible(name, context, headers, endpoints, sendAzure),
    responses: settings.responses === 'native' ? nativeResponsesApi(name, endpoints.responses, headers, context, sendAzure) : undefined,
  }
}

/** What the config needs for an Azure upstream: its resource's endpoint, and a key whose variable is set. */
function checkAzure(settings: UpstreamSettings, env: Readonly<Record<string, string | undefined>>): { field: string; message: string } | null {
  if (settings.baseUrl) return { field: 'base_url', message: 'kind "azure" takes `endpoint` (https://<resource>.openai.azure.com) instead' }
  if (!settings.endpoint) return { field: 'endpoint', message: 'required for kind "azure" (https://<resource>.openai.azure.com)' }
  if (!settings.apiKeyEnv) return { field: 'api_key_env', message: 'required for kind "azure" (the variable holding the resource key)' }
  if (!env[settings.apiKeyEnv]) return { field: 'api_key_env', message: `the environment variable ${settings.apiKeyEnv} is not set` }
  return null
}

export const azureKind: ProviderKind = {
  kind: 'azure',
  needsBaseUrl: false,
  defaultBaseUrl: null,
  models: null,
  nativeResponses: true,
  fields: ['endpoint', 'api_version'],
  check: checkAzure,
  create: createAzureProvider,
}
