import type { UpstreamSettings } from '../../config/types'
import { endpointUrl, sendRequest, upstreamHeaders } from '../http'
import type { Provider, ProviderContext, ProviderKind } from '../types'
import { openaiCompatible } from './compatible'
import { nativeResponsesApi } from './responses'

/** Any OpenAI-compatible API: OpenAI, Groq, Together, vLLM, Ollama, LM Studio... */
function createOpenAIProvider(settings: UpstreamSettings, context: ProviderContext): Provider {
  const name = settings.name
  const chatUrl = endpointUrl(settings.baseUrl!, 'chat/completions')
  const embeddingsUrl = endpointUrl(settings.baseUrl!, 'embeddings')
  const responsesUrl = endpointUrl(settings.baseUrl!, 'responses')
  const headers = upstreamHeaders(settings, context.env, (secret) => ({ authorization: `Bearer ${secret}` }))
  return {
    ...openaiCompatible(name, context, headers, { chat: () => chatUrl, embeddings: () => embeddingsUrl }, sendRequest),
    responses:
      settings.responses === 'native'
        ? nativeResponsesApi(name, (path) => (path === '' ? responsesUrl : `${responsesUrl}/${path}`), headers, context, sendRequest)
        : undefined,
  }
}

export const openaiKind: ProviderKind = {
  kind: 'openai',
  needsBaseUrl: true,
  defaultBaseUrl: 'https://api.openai.com/v1',
  models: null,
  nativeResponses: true,
  create: createOpenAIProvider,
}
