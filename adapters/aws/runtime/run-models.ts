/**
 * The model clients of a cloud run, rebuilt from its spec: offline models by name, hosted
 * models from the registry with the spec's parameters. A hosted model whose registry
 * parameters no longer match the spec is refused: its answers would not be the run's.
 */
import type { ModelClient } from '../../../core/model';
import type { ModelSpec, RunSpec } from '../../../core/records';
import type { Pset } from '../../../core/types';
import type { CostModel } from '../../../core/run/generate';
import { canonicalJson } from '../../../core/ids';
import { EmptyModel, OracleModel, replayModels } from '../../models/offline';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BlobStore } from '../../../core/store';
import { cloudKeys } from '../../../core/cloud/payloads';
import { RunInputError } from '../../../core/cloud/pset-bundle';
import { costModelFor, type HostedModels } from '../../models/hosted-models';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { promptTokensUpperBound, tokenizerFor } from '../../models/tokens';
import { batchPricing, worstCaseCost } from '../../../core/cost';
import type { BatchClient } from '../../../core/batch';
import { batchProblem, loadRegistry, type ModelEntry } from '../../models/registry';
import { resourcePath } from '../../../core/util/package-root';
import { DEPLOYED_MODELS_FILE } from '../../../core/cloud/bundle-resources';

/**
 * The registry a deployed function prices and routes with: the shipped models.yaml and,
 * merged over it, the deployment's own file (`rcb:modelsFile`), both inside the bundle.
 */
export function loadDeployedRegistry(): ModelEntry[] {
  const deployed = resourcePath(DEPLOYED_MODELS_FILE);
  return loadRegistry(existsSync(deployed) ? { userFile: deployed } : {});
}

export const OFFLINE_MODELS = new Set(['oracle', 'empty']);

/** A `replay:FILE` model of a spec: its one parameter is the replay file's digest. */
export function isReplaySpec(m: ModelSpec): boolean {
  return typeof m.params.replay === 'string' && Object.keys(m.params).length === 1;
}

/** Answered without a provider: oracle, empty, or a replay file. */
export function isOfflineSpec(m: ModelSpec): boolean {
  return OFFLINE_MODELS.has(m.id) || isReplaySpec(m);
}

/**
 * The replayed models of a run, from the replay files uploaded with it
 * (core/cloud/pset-bundle.ts uploadReplayFiles), by model id; each file is fetched once into
 * `scratchDir` and checked against the digest the spec was planned with.
 */
export async function loadRunReplays(blobs: BlobStore, spec: Pick<RunSpec, 'models'>, scratchDir: string): Promise<Map<string, ModelClient>> {
  const out = new Map<string, ModelClient>();
  const wanted = spec.models.filter(isReplaySpec);
  for (const digest of new Set(wanted.map((m) => m.params.replay as string))) {
    const key = cloudKeys.replayFile(digest);
    const body = await blobs.get(key);
    if (!body) throw new RunInputError(`replay file ${key} is not in the blob store (rcb cloud run uploads it)`);
    const dir = join(scratchDir, 'replays');
    mkdirSync(dir, { recursive: true });
    const path = join(dir, `${digest}.jsonl`);
    writeFileSync(path, body);
    for (const model of replayModels(path)) {
      if (model.params.replay !== digest) throw new RunInputError(`replay file ${key} has digest ${String(model.params.replay)}, not ${digest}`);
      if (wanted.some((m) => m.id === model.id && m.params.replay === digest)) out.set(model.id, model);
    }
  }
  const missing = wanted.filter((m) => !out.has(m.id)).map((m) => m.id);
  if (missing.length) throw new RunInputError(`no answers of model(s) ${missing.join(', ')} in the run's replay files`);
  return out;
}

export interface RunModels {
  clients: Map<string, ModelClient>;
  costs: Map<string, CostModel>;
}

/** A hosted model of the spec as the registry resolves it with the spec's temperature. */
function resolveHosted(hosted: HostedModels, m: ModelSpec) {
  const temperature = typeof m.params.temperature === 'number' ? m.params.temperature : undefined;
  const hit = hosted.resolve(m.id, { temperature });
  if (!hit) throw new Error(`model "${m.id}" is not in the model registry of this deployment`);
  return hit;
}

export function resolveRunModels(spec: Pick<RunSpec, 'models'>, pset: Pset, hosted: () => HostedModels, replays: Map<string, ModelClient> = new Map()): RunModels {
  const out: RunModels = { clients: new Map(), costs: new Map() };
  for (const m of spec.models) {
    if (m.id === 'oracle') out.clients.set(m.id, new OracleModel(pset));
    else if (m.id === 'empty') out.clients.set(m.id, new EmptyModel());
    else if (isReplaySpec(m)) {
      const replay = replays.get(m.id);
      if (!replay) throw new RunInputError(`model "${m.id}" is replayed, but its replay file was not loaded`);
      out.clients.set(m.id, replay);
    } else {
      const hit = resolveHosted(hosted(), m);
      if (canonicalJson(hit.client.params) !== canonicalJson(m.params)) {
        throw new Error(`model "${m.id}": the registry's parameters ${canonicalJson(hit.client.params)} differ from the run's ${canonicalJson(m.params)}`);
      }
      out.clients.set(m.id, hit.client);
      out.costs.set(m.id, hit.cost);
    }
  }
  return out;
}

/** Prices of the spec's hosted models (what PlanRun checks the budget with); offline models have none and read no registry. */
export function runModelCosts(spec: Pick<RunSpec, 'models'>, hosted: () => HostedModels, tokens: PromptTokenCache = SHARED_TOKEN_CACHE): Map<string, CostModel> {
  const costs = new Map<string, CostModel>();
  for (const m of spec.models) {
    if (isOfflineSpec(m)) continue;
    const h = hosted();
    resolveHosted(h, m);
    const temperature = typeof m.params.temperature === 'number' ? m.params.temperature : undefined;
    costs.set(m.id, tokens.costModel(h.entry(m.id, { temperature })!));
  }
  return costs;
}

/** What the batch lane needs of a run's batch-mode models. */
export interface RunBatchModels {
  batchClients: Map<string, BatchClient>;
  /** Pricing at each model's batch prices. */
  batchCosts: Map<string, CostModel>;
}

/**
 * Batch clients and batch prices of a run's batch-mode models, from the deployed registry
 * with the spec's parameters; a model the registry cannot batch is refused, naming why.
 */
export function resolveRunBatchModels(
  spec: Pick<RunSpec, 'models'>,
  batchModels: readonly string[],
  hosted: () => HostedModels,
  /** Slow models asked in their provider's background mode instead. */
  backgroundModels: readonly string[] = [],
): RunBatchModels {
  const out: RunBatchModels = { batchClients: new Map(), batchCosts: new Map() };
  for (const id of [...batchModels, ...backgroundModels]) {
    const m = spec.models.find((s) => s.id === id);
    if (!m) throw new RunInputError(`batch-mode model "${id}" is not in the run spec`);
    if (isOfflineSpec(m)) throw new RunInputError(`batch-mode model "${id}" is offline: it has no batch API`);
    const h = hosted();
    const hit = resolveHosted(h, m);
    if (canonicalJson(hit.client.params) !== canonicalJson(m.params)) {
      throw new Error(`model "${m.id}": the registry's parameters ${canonicalJson(hit.client.params)} differ from the run's ${canonicalJson(m.params)}`);
    }
    const temperature = typeof m.params.temperature === 'number' ? m.params.temperature : undefined;
    const batch = backgroundModels.includes(id) ? h.resolveBackground(id, { temperature }) : h.resolveBatch(id, { temperature });
    if (!batch && backgroundModels.includes(id)) throw new RunInputError(`model "${id}" is not slow in this deployment's registry: it has no background mode here`);
    if (!batch) throw new RunInputError(`model "${id}" cannot go through a batch API: ${batchProblem(h.entry(id, { temperature })!) ?? 'no batch client'}`);
    out.batchClients.set(id, batch.client);
    out.batchCosts.set(id, batch.cost);
  }
  return out;
}

/** The spec's slow models (`slow: true` in the deployed registry): PlanRun leaves them to the batch lane. */
export function runSlowModels(spec: Pick<RunSpec, 'models'>, hosted: () => HostedModels): Set<string> {
  return new Set(spec.models.filter((m) => !isOfflineSpec(m) && hosted().entry(m.id)?.slow).map((m) => m.id));
}

/** Batch prices of the batch-mode models (what PlanRun checks their share of the budget with). */
export function runBatchCosts(spec: Pick<RunSpec, 'models'>, batchModels: readonly string[], hosted: () => HostedModels, tokens: PromptTokenCache = SHARED_TOKEN_CACHE): Map<string, CostModel> {
  const costs = new Map<string, CostModel>();
  for (const id of batchModels) {
    const m = spec.models.find((s) => s.id === id);
    if (!m || isOfflineSpec(m)) continue;
    const temperature = typeof m.params.temperature === 'number' ? m.params.temperature : undefined;
    const entry = hosted().entry(id, { temperature });
    const prices = entry && batchPricing(entry.prices);
    if (entry && prices) costs.set(id, tokens.costModel({ ...entry, prices }));
  }
  return costs;
}

/**
 * Prompt-token upper bounds by tokenizer and prompt digest, shared by the cost models of a
 * warm instance: tokenizing is the slow part of pricing (js-tiktoken, ~2 MB/s), and the
 * models of one family (one tokenizer) and every sample of a task see the same prompt.
 * Bounded: past `maxEntries` the oldest counts go first.
 */
export class PromptTokenCache {
  private readonly bounds = new Map<string, number>();
  /** Counts done (cache misses), for the bench. */
  counted = 0;
  constructor(private readonly maxEntries = 20_000) {}

  bound(text: string, entry: ModelEntry): number {
    const key = `${tokenizerFor(entry)}:${createHash('sha256').update(text).digest('base64')}`;
    let n = this.bounds.get(key);
    if (n === undefined) {
      n = promptTokensUpperBound(text, entry);
      this.counted++;
      if (this.bounds.size >= this.maxEntries) this.bounds.delete(this.bounds.keys().next().value!);
      this.bounds.set(key, n);
    }
    return n;
  }

  /** The registry entry's cost model (hosted-models.ts costModelFor) with its token counts from this cache. */
  costModel(entry: ModelEntry): CostModel {
    const base = costModelFor(entry);
    return { worstCase: (prompt) => worstCaseCost(this.bound(prompt.text, entry), entry.params.max_output_tokens, entry.prices), billed: base.billed };
  }
}

const SHARED_TOKEN_CACHE = new PromptTokenCache();
