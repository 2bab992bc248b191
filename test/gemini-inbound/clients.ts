/**
 * The real-client gateway of test/clients/harness.ts (a gateway process, as in production, in front
 * of fakes of every upstream kind and the mock), for Gemini CLI and the Google GenAI SDK: its fake
 * Gemini API (kind gemini) is behind `gemini/flash`.
 */
import type { FakeGemini, FakeGeminiOptions } from '../support/fakes/gemini'
import { ALIASES, type ClientsGateway, type ClientsGatewayOptions, startClientsGateway } from '../clients/harness'

/** The alias on the fake Gemini API, model `gemini-2.5-flash`: passed through. */
export const GEMINI_ALIAS = ALIASES.gemini

export interface GeminiClientsGateway extends ClientsGateway {
  gemini: FakeGemini
}

export const startGeminiClientsGateway = (options: ClientsGatewayOptions & { gemini?: FakeGeminiOptions } = {}): Promise<GeminiClientsGateway> =>
  startClientsGateway(options)
