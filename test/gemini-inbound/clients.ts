/**
 * The real-client gateway of test/clients/harness.ts (a gateway process, as in production, in front
 * of the fake Anthropic and OpenAI upstreams and the mock), with a fake Gemini API (kind gemini)
 * behind one more alias, for Gemini CLI and the Google GenAI SDK.
 */
import { fakeGemini, type FakeGemini, type FakeGeminiOptions } from '../support/fakes/gemini'
import { type ClientsGateway, type ClientsGatewayOptions, FAKE_OPENAI_KEY, startClientsGateway } from '../clients/harness'

/** The alias on the fake Gemini API, model `gemini-2.5-flash`: passed through. */
export const GEMINI_ALIAS = 'gemini/flash'

export interface GeminiClientsGateway extends ClientsGateway {
  gemini: FakeGemini
}

export async function startGeminiClientsGateway(options: ClientsGatewayOptions & { gemini?: FakeGeminiOptions } = {}): Promise<GeminiClientsGateway> {
  // The gateway process gets the harness's environment: the Gemini upstream's key is the variable the harness sets.
  const gemini = fakeGemini({ apiKey: FAKE_OPENAI_KEY, ...options.gemini })
  const cg = await startClientsGateway({
    ...options,
    others: [...(options.others ?? []), gemini],
    extraToml: (fakes) => `${options.extraToml?.(fakes) ?? ''}
[upstreams.gem]
kind = "gemini"
base_url = "${gemini.url}"
api_key_env = "FAKE_OPENAI_KEY"
max_retries = 0

[aliases."${GEMINI_ALIAS}"]
targets = [{ upstream = "gem", model = "gemini-2.5-flash" }]
`,
  })
  return { ...cg, gemini }
}
