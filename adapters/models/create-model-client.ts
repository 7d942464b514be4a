/**
 * Build the client for a registry entry: the provider's client with its key from the
 * KeySource, and, for runs, the same wrapped in retries and its provider lane's rate
 * control.
 */
import type { KeySource } from '../../core/keys';
import { ModelError, type ModelClient, type ModelRequest } from '../../core/model';
import type { RateLanes } from '../../core/rate';
import { providerModule } from './providers';
import type { ProviderClientOptions } from './provider-common';
import type { ProviderTable } from './provider-module';
import type { ModelEntry } from './registry';
import { ResilientModelClient, type ResilientOptions } from './resilient-client';

/** The name of the variable holding the entry's key, if it needs one: the entry's, else its provider's. */
export function keyEnvFor(entry: ModelEntry, providers?: ProviderTable): string | undefined {
  return entry.api_key_env ?? providerModule(entry.provider, providers).keyEnv;
}

/**
 * The provider client for an entry, without retries or rate control. An entry needs a key
 * exactly when keyEnvFor names a variable; when that key is missing this rejects with an
 * `auth` ModelError naming the variable.
 */
export async function createModelClient(entry: ModelEntry, keys: KeySource, opts: ProviderClientOptions = {}): Promise<ModelClient> {
  const env = keyEnvFor(entry, opts.providers);
  const key = env ? await keys.get(env) : undefined;
  if (env && !key) throw new ModelError('auth', `model ${entry.id}: no API key: set ${env}`);
  return providerModule(entry.provider, opts.providers).createClient(entry, key, opts);
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
