/**
 * Registry models as a run uses them: for each id, a client (provider client behind
 * retries and its provider lane), what reports need to know of the model, and how its
 * calls are priced for the budget. Clients are built on their first call, so that ids
 * resolve synchronously; `checkKeys` finds missing keys before a run starts.
 */
import type { KeySource } from '../../core/keys';
import { batchPricing, costOf, worstCaseCost, type BilledUsage } from '../../core/cost';
import type { BatchClient, BatchItemResult, BatchLimits, BatchRequest, BatchStatus } from '../../core/batch';
import { ModelError, type ModelClient, type ModelRequest, type ModelResponse, type Prompt } from '../../core/model';
import { RateLanes } from '../../core/rate';
import type { CostModel } from '../../core/run/generate';
import type { ModelInfo } from '../../core/records';
import type { TokenUsage } from '../../core/types';
import { createRunModelClient, keyEnvFor, type RunClientOptions } from './create-model-client';
import { answerParams } from './provider-common';
import { longCallPath, supportsBatch, type ModelEntry } from './registry';
import { promptTokensUpperBound } from './tokens';
import { providerModule } from './providers';
import type { ProviderTable } from './provider-module';

/** Budget pricing of an entry: worst case before the call, billed amount after. */
export function costModelFor(entry: ModelEntry, providers?: ProviderTable): CostModel {
  return {
    worstCase: (prompt: Prompt) => worstCaseCost(promptTokensUpperBound(prompt.text, entry, providers), entry.params.max_output_tokens, entry.prices),
    billed: (usage: TokenUsage) => costOf(usage as BilledUsage, entry.prices),
  };
}

/** Overrides a run applies to every hosted model. */
export interface HostedOverrides {
  temperature?: number;
}

export interface HostedModelsOptions extends Omit<RunClientOptions, 'lanes'> {
  /** Shared by every client built here; one per run (or per process). @default a new RateLanes */
  lanes?: RateLanes;
}

export class HostedModels {
  private readonly byId: Map<string, ModelEntry>;
  private readonly lanes: RateLanes;

  constructor(
    entries: ModelEntry[],
    private readonly keys: KeySource,
    private readonly opts: HostedModelsOptions = {},
  ) {
    this.byId = new Map(entries.map((e) => [e.id, e]));
    this.lanes = opts.lanes ?? new RateLanes();
  }

  ids(): string[] {
    return [...this.byId.keys()];
  }

  /**
   * The entry with the run's overrides applied. A temperature is not applied to models
   * whose API refuses one (OpenAI reasoning models on the Responses API, extended
   * thinking): the run records the parameters each model actually ran with.
   */
  entry(id: string, overrides: HostedOverrides = {}): ModelEntry | undefined {
    const entry = this.byId.get(id);
    if (!entry) return undefined;
    const refusesTemperature = providerModule(entry.provider, this.opts.providers).refusesTemperature(entry) || (entry.params.thinking_budget ?? 0) > 0;
    if (overrides.temperature === undefined || refusesTemperature) return entry;
    return { ...entry, params: { ...entry.params, temperature: overrides.temperature } };
  }

  /** The run's view of a registry id; undefined when the id is unknown. */
  resolve(id: string, overrides: HostedOverrides = {}): { client: ModelClient; info: ModelInfo; cost: CostModel } | undefined {
    const entry = this.entry(id, overrides);
    if (!entry) return undefined;
    return {
      client: new LazyModelClient(entry, () => createRunModelClient(entry, this.keys, { ...this.opts, lanes: this.lanes })),
      info: modelInfoOf(entry),
      cost: costModelFor(entry, this.opts.providers),
    };
  }

  /**
   * The batch view of a registry id: its provider's batch client (built on first use) and
   * pricing at its batch prices; undefined when the id is unknown or cannot be batched.
   */
  resolveBatch(id: string, overrides: HostedOverrides = {}): { client: BatchClient; cost: CostModel } | undefined {
    const entry = this.entry(id, overrides);
    if (!entry || !supportsBatch(entry, this.opts.providers)) return undefined;
    const create = providerModule(entry.provider, this.opts.providers).createBatchClient;
    if (!create) return undefined;
    const build = async (): Promise<BatchClient> => {
      const env = keyEnvFor(entry, this.opts.providers);
      const key = env ? await this.keys.get(env) : undefined;
      if (env && !key) throw new ModelError('auth', `model ${entry.id}: no API key: set ${env}`);
      return create(entry, key, this.opts);
    };
    return {
      client: new LazyBatchClient(entry.id, build, providerModule(entry.provider, this.opts.providers).batchLimits?.(entry, this.opts)),
      cost: costModelFor({ ...entry, prices: batchPricing(entry.prices)! }, this.opts.providers),
    };
  }

  /**
   * A slow model's long-call client (`slow: true` entries, registry.ts longCallPath), under
   * the batch contract: its provider's background mode priced as interactive calls, or else
   * its batch API at batch prices. Undefined for an entry that is not slow or has neither.
   */
  resolveBackground(id: string, overrides: HostedOverrides = {}): { client: BatchClient; cost: CostModel } | undefined {
    const entry = this.entry(id, overrides);
    if (!entry?.slow) return undefined;
    const path = longCallPath(entry, this.opts.providers);
    if (path === 'batch') return this.resolveBatch(id, overrides);
    const provider = providerModule(entry.provider, this.opts.providers);
    const create = path === 'background' ? provider.createBackgroundClient : undefined;
    if (!create) return undefined;
    const build = async (): Promise<BatchClient> => {
      const env = keyEnvFor(entry, this.opts.providers);
      const key = env ? await this.keys.get(env) : undefined;
      if (env && !key) throw new ModelError('auth', `model ${entry.id}: no API key: set ${env}`);
      return create(entry, key, this.opts);
    };
    return { client: new LazyBatchClient(entry.id, build, provider.backgroundLimits), cost: costModelFor(entry, this.opts.providers) };
  }

  /** One message per model among `ids` whose key is missing (`set OPENAI_API_KEY for gpt-5.4`). */
  async checkKeys(ids: string[]): Promise<string[]> {
    const problems: string[] = [];
    for (const id of ids) {
      const entry = this.byId.get(id);
      const env = entry && keyEnvFor(entry, this.opts.providers);
      if (!env) continue; // unknown id, or no key needed (see createModelClient)
      if (!(await this.keys.get(env))) problems.push(`set ${env} for ${id}`);
    }
    return problems;
  }

  /** Lane states (limit, in flight, queued, pause), for progress and logs. */
  lanesSnapshot(): ReturnType<RateLanes['snapshot']> {
    return this.lanes.snapshot();
  }
}

/** A client built on its first call; a failure to build (a missing key) fails each call. */
class LazyModelClient implements ModelClient {
  readonly id: string;
  readonly params: Record<string, unknown>;
  readonly offline = false;
  private inner?: Promise<ModelClient>;

  constructor(
    entry: ModelEntry,
    private readonly build: () => Promise<ModelClient>,
  ) {
    this.id = entry.id;
    this.params = answerParams(entry);
  }

  async complete(req: ModelRequest): Promise<ModelResponse> {
    this.inner ??= this.build();
    return (await this.inner).complete(req);
  }
}

/** A batch client built on its first use; a failure to build (a missing key) fails each call. */
/** A batch client built on first use (its key is read then); its limits are known before. */
class LazyBatchClient implements BatchClient {
  private inner?: Promise<BatchClient>;

  constructor(
    readonly id: string,
    private readonly build: () => Promise<BatchClient>,
    readonly limits?: BatchLimits,
  ) {}

  private client(): Promise<BatchClient> {
    return (this.inner ??= this.build());
  }

  async submit(requests: BatchRequest[], signal?: AbortSignal, intentId?: string): Promise<string> {
    return (await this.client()).submit(requests, signal, intentId);
  }

  async findByIntent(intentId: string, signal?: AbortSignal): Promise<string | null> {
    const inner = await this.client();
    return inner.findByIntent ? inner.findByIntent(intentId, signal) : null;
  }

  async poll(batchId: string, signal?: AbortSignal): Promise<BatchStatus> {
    return (await this.client()).poll(batchId, signal);
  }

  async results(batchId: string, signal?: AbortSignal): Promise<BatchItemResult[]> {
    return (await this.client()).results(batchId, signal);
  }

  async cancel(batchId: string, signal?: AbortSignal): Promise<void> {
    return (await this.client()).cancel(batchId, signal);
  }
}

/** What a run records of a registry model for its reports: cutoff, display name, developer, openness, and the parameters it ran with. */
function modelInfoOf(entry: ModelEntry): ModelInfo {
  const info: ModelInfo = { knowledgeCutoff: entry.knowledge_cutoff, config: { name: entry.id, provider: entry.provider, ...answerParams(entry) } };
  if (entry.display_name) info.displayName = entry.display_name;
  if (entry.developer) info.developer = entry.developer;
  if (entry.open !== undefined) info.open = entry.open;
  return info;
}
