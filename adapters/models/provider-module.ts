/**
 * What rcb knows of one model provider, in one place: its clients (interactive, batch,
 * background), the variable its key is read from, the cloud lane its calls go through and
 * that lane's concurrency, its batch limits, the tokenizer of its estimates, how it caches a
 * shared prompt prefix, and (inside its clients) how its usage maps to rcb's token
 * conventions (core/cost.ts) and its HTTP statuses to rcb's error kinds
 * (provider-errors.ts). Everything else derives from the modules: the lane table
 * (provider-lanes.ts) that the SQS router and the stack read, the registry's providers, the
 * long-call path of slow entries. Adding a provider is one module in providers/, one line in
 * providers/index.ts and its entries in resources/models.yaml.
 */
import type { CacheMode } from '../../core/cost';
import type { BatchClient, BatchLimits } from '../../core/batch';
import type { ModelClient } from '../../core/model';
import type { ProviderClientOptions } from './provider-common';
import type { ModelEntry } from './registry';

export type Tokenizer = 'o200k_base' | 'cl100k_base' | 'approx';

export interface ProviderModule {
  /** The registry's `provider` value. */
  readonly name: string;
  /** Variable holding the key when the entry names no `api_key_env`; undefined: no key needed. */
  readonly keyEnv: string | undefined;
  /** The cloud lane (one SQS queue and DLQ) its calls go through; undefined: the routing's default lane. */
  readonly lane: string | undefined;
  /**
   * The lane's most generator invocations at once (its SQS event source's maximum
   * concurrency) when the stack's `rcb:lanes` does not say; set by the module that owns the
   * lane (openai-responses shares openai's). A lane no module gives one is not deployed by default.
   */
  readonly laneMaxConcurrency?: number;
  /** A name earlier deployments gave its lane (`rcb:lanes`), still routed to when present. */
  readonly formerLane?: string;
  /** Shortest prefix the provider caches, tokens, when the entry does not say. */
  readonly cacheMinTokens: number;
  /** Tokenizer for estimates and reservations when the entry does not name one. */
  tokenizer(entry: Pick<ModelEntry, 'model'>): Tokenizer;
  /** How the entry's shared prefix is cached, for estimates. */
  cacheMode(entry: ModelEntry): CacheMode;
  /** Whether the API refuses a sampling temperature for this entry (a run's --temperature is then not applied). */
  refusesTemperature(entry: ModelEntry): boolean;
  /**
   * Hours within which the provider's batch API promises to process a batch (its
   * completion window); undefined for a provider without one.
   */
  readonly batchWindowHours?: number;
  /** What else the entry needs for batches (Bedrock: an S3 location and a role), or undefined when it has it. */
  batchRequirement?(entry: ModelEntry): string | undefined;
  /** The interactive client; `key` is set whenever keyEnv (or the entry's api_key_env) names a variable. */
  createClient(entry: ModelEntry, key: string | undefined, opts: ProviderClientOptions): ModelClient;
  /**
   * The provider's limits on one batch for this entry (the batch client's `limits`), known
   * before a client is built (a client is built once its key is read). @default rcb's defaults
   */
  batchLimits?(entry: ModelEntry, opts: ProviderClientOptions): BatchLimits;
  /** The batch client, for providers with a batch API. */
  createBatchClient?(entry: ModelEntry, key: string | undefined, opts: ProviderClientOptions): BatchClient;
  /**
   * Background mode for slow models (`slow: true`): each request started, then retrieved until
   * it ends, under the batch contract; for providers that have one (OpenAI Responses).
   */
  createBackgroundClient?(entry: ModelEntry, key: string | undefined, opts: ProviderClientOptions): BatchClient;
  /** The limits on one set of background requests (the background client's `limits`), known before a client is built. */
  readonly backgroundLimits?: BatchLimits;
}

/**
 * Provider modules by the registry's `provider` value: PROVIDER_MODULES (providers/index.ts),
 * a const map. Functions that look a module up take one (default PROVIDER_MODULES), so that
 * a caller (a test) can add a provider without registering it anywhere.
 */
export type ProviderTable = Readonly<Record<string, ProviderModule>>;

/** The OpenAI families' tokenizer by model name: cl100k for GPT-3.5 and GPT-4 before 4o, else o200k. */
export function openaiTokenizer(model: string): Tokenizer {
  const m = model.toLowerCase().replace(/^openai\//, '');
  return /^gpt-(3\.5|4)(?!o|\.1|\.5)/.test(m) ? 'cl100k_base' : 'o200k_base';
}

/**
 * What OpenAI's two APIs (Chat Completions, Responses) share: the key, the lane, the 24 h
 * Batch API window, automatic prefix caching from 1,024 tokens and the tokenizer by model.
 */
export const OPENAI_FAMILY = {
  keyEnv: 'OPENAI_API_KEY',
  lane: 'openai',
  cacheMinTokens: 1024,
  batchWindowHours: 24,
  tokenizer: (entry: Pick<ModelEntry, 'model'>): Tokenizer => openaiTokenizer(entry.model),
  cacheMode: (entry: ModelEntry): CacheMode => automaticCache(entry),
} as const satisfies Partial<ProviderModule>;

/** Providers that cache prefixes by themselves: caching pays when the cached price is lower. */
export function automaticCache(entry: ModelEntry): CacheMode {
  return entry.prices.cached_input < entry.prices.input ? 'automatic' : 'none';
}
