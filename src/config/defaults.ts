import type { ConfigFile } from './schema'

/** `[http] max_upstream_connections` when the config does not set it. */
export const DEFAULT_UPSTREAM_CONNECTIONS = 10_000

/**
 * What a newcomer gets with no config file: three tiers, the offline `local/echo` alias, and
 * OpenAI and Anthropic aliases that start working once OPENAI_API_KEY / ANTHROPIC_API_KEY is set.
 */
export const DEFAULT_CONFIG: ConfigFile = {
  tiers: {
    free: { requests_per_minute: 20, tokens_per_minute: 20_000, max_concurrent: 4, models: ['local/*', 'openai/fast', 'openai/embed', 'anthropic/fast'] },
    standard: { requests_per_minute: 60, tokens_per_minute: 200_000, max_concurrent: 8 },
    pro: { requests_per_minute: 600, tokens_per_minute: 2_000_000, max_concurrent: 32 },
  },
  upstreams: {
    local: { kind: 'mock' },
    // OpenAI serves the Responses API itself: it gets Responses requests as sent.
    openai: { kind: 'openai', base_url: 'https://api.openai.com/v1', api_key_env: 'OPENAI_API_KEY', responses: 'native' },
    anthropic: { kind: 'anthropic', base_url: 'https://api.anthropic.com/v1', api_key_env: 'ANTHROPIC_API_KEY' },
  },
  aliases: {
    'local/echo': { targets: [{ upstream: 'local', model: 'echo' }] },
    'local/embed': { targets: [{ upstream: 'local', model: 'embed' }] },
    'openai/fast': { targets: [{ upstream: 'openai', model: 'gpt-4o-mini' }] },
    'openai/smart': { targets: [{ upstream: 'openai', model: 'gpt-4o' }] },
    'openai/embed': { targets: [{ upstream: 'openai', model: 'text-embedding-3-small' }] },
    'anthropic/fast': { targets: [{ upstream: 'anthropic', model: 'claude-haiku-4-5' }] },
    'anthropic/smart': { targets: [{ upstream: 'anthropic', model: 'claude-sonnet-4-5' }] },
  },
}
