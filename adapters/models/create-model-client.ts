/**
 * Build the client for a registry entry: the provider's client with its key from the
 * KeySource, and, for runs, the same wrapped in retries and its provider lane's rate
 * control.
 */
import type { KeySource } from '../../core/keys';
import { ModelError, type ModelClient, type ModelRequest } from '../../core/model';
import type { RateLanes } from '../../core/rate';
import { AnthropicClient } from './anthropic-client';
import { BedrockClient } from './bedrock-client';
import { GeminiClient } from './gemini-client';
import { OpenAIChatClient } from './openai-chat-client';
import { OpenAIResponsesClient } from './openai-responses-client';
import type { ProviderClientOptions } from './provider-common';
import type { ModelEntry } from './registry';
import { ResilientModelClient, type ResilientOptions } from './resilient-client';

/** Where each provider's key is looked for when the entry names no `api_key_env`. */
export const DEFAULT_KEY_ENV: Record<ModelEntry['provider'], string | undefined> = {
  openai: 'OPENAI_API_KEY',
  'openai-responses': 'OPENAI_API_KEY',
  anthropic: 'ANTHROPIC_API_KEY',
  gemini: 'GEMINI_API_KEY',
  bedrock: undefined, // the AWS credential chain, unless the entry names a Bedrock API key
  'openai-compatible': undefined, // local servers (vLLM) often need none
};

/** The name of the variable holding the entry's key, if it needs one. */
export function keyEnvFor(entry: ModelEntry): string | undefined {
  return entry.api_key_env ?? DEFAULT_KEY_ENV[entry.provider];
}

/**
 * The provider client for an entry, without retries or rate control. An entry needs a key
 * exactly when keyEnvFor names a variable; when that key is missing this rejects with an
 * `auth` ModelError naming the variable.
 */
export async function createModelClient(entry: ModelEntry, keys: KeySource, opts: ProviderClientOptions = {}): Promise<ModelClient> {
  const env = keyEnvFor(entry);
  const key = env ? await keys.get(env) : undefined;
  if (env && !key) throw new ModelError('auth', `model ${entry.id}: no API key: set ${env}`);
  switch (entry.provider) {
    case 'openai':
      return new OpenAIChatClient(entry, key as string, opts);
    case 'openai-compatible':
      // No key only when the entry names no variable. The SDK insists on a key; servers
      // without auth ignore it.
      return new OpenAIChatClient(entry, key ?? 'unused', opts);
    case 'openai-responses':
      return new OpenAIResponsesClient(entry, key as string, opts);
    case 'anthropic':
      return new AnthropicClient(entry, key as string, opts);
    case 'gemini':
      return new GeminiClient(entry, key as string, opts);
    case 'bedrock':
      // No key (no variable named): the AWS credential chain signs the calls.
      return new BedrockClient(entry, key, opts);
  }
}

/** The lane key: calls to the same model at the same endpoint share one rate limit. */
export function laneKey(entry: ModelEntry): string {
  return `${entry.provider}|${entry.base_url ?? ''}|${entry.region ?? ''}|${entry.model}`;
}

export interface RunClientOptions extends ProviderClientOptions, Omit<ResilientOptions, 'rate' | 'estimateTokens'> {
  /** Lanes shared by every client of the run. */
  lanes: RateLanes;
  /** Prompt tokens of a request, for the TPM bucket (max output tokens are added). @default characters / 4 */
  promptTokens?: (req: ModelRequest) => number;
}

/** The client a run uses: the provider's client behind retries and its lane's rate control. */
export async function createRunModelClient(entry: ModelEntry, keys: KeySource, opts: RunClientOptions): Promise<ResilientModelClient> {
  const inner = await createModelClient(entry, keys, opts);
  const rate = opts.lanes.lane(laneKey(entry), {
    maxInFlight: entry.rate?.max_in_flight,
    rpm: entry.rate?.rpm,
    tpm: entry.rate?.tpm,
  });
  const promptTokens = opts.promptTokens ?? ((req: ModelRequest) => Math.ceil(req.prompt.text.length / 4));
  return new ResilientModelClient(inner, {
    ...opts,
    rate,
    estimateTokens: entry.rate?.tpm ? (req) => promptTokens(req) + entry.params.max_output_tokens : undefined,
  });
}
