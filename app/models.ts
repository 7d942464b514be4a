/**
 * Model clients, resolved in one place for every entry point: from `--model` names (the CLI,
 * a sweep: resolveModels) and from a run's spec (the cloud stages, the emulator:
 * resolveRunModels); offline models (oracle, empty, replay) by name, hosted ones through the
 * registry, and the batch and background clients of the lanes that no call waits on
 * (laneClient). A hosted model whose registry parameters no longer match a spec is refused:
 * its answers would not be the run's.
 */
import { resolve } from 'node:path';
import type { ModelInfo } from '../core/records';
import { envKeySource } from '../core/keys';
import { HostedModels } from '../adapters/models/hosted-models';
import { UsageError } from './local-machine';
import { replayProblems } from './replay-check';
import { unknownName } from '../core/util/did-you-mean';
import type { ModelClient } from '../core/model';
import type { ModelSpec, RunSpec } from '../core/records';
import type { Pset } from '../core/types';
import type { CostModel } from '../core/run/generate';
import { canonicalJson } from '../core/ids';
import { EmptyModel, OracleModel, replayModels } from '../adapters/models/offline';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BlobStore } from '../core/store';
import { cloudKeys } from '../core/cloud/payloads';
import { RunInputError } from '../core/cloud/pset-bundle';
import { costModelFor } from '../adapters/models/hosted-models';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { promptTokensUpperBound, tokenizerFor } from '../adapters/models/tokens';
import { batchPricing, worstCaseCost } from '../core/cost';
import type { BatchClient } from '../core/batch';
import { batchProblem, loadRegistry, longCallProblem, type ModelEntry } from '../adapters/models/registry';
import { resourcePath } from '../core/util/package-root';
import { DEPLOYED_MODELS_FILE } from '../core/cloud/bundle-resources';

/**
 * The registry a deployed function prices and routes with: the shipped models.yaml and,
 * merged over it, the deployment's own file (`rcb:modelsFile`), both inside the bundle.
 */
export function loadDeployedRegistry(): ModelEntry[] {
  const deployed = resourcePath(DEPLOYED_MODELS_FILE);
  return loadRegistry(existsSync(deployed) ? { userFile: deployed } : {});
}

export const OFFLINE_MODELS = new Set(['oracle', 'empty']);

/** oracle (the original code) or empty (no answer) by name; undefined for any other id. */
export function offlineClient(id: string, pset: Pset): ModelClient | undefined {
  if (id === 'oracle') return new OracleModel(pset);
  if (id === 'empty') return new EmptyModel();
  return undefined;
}

/** The lanes no model call waits on: a provider's batch API, or its background mode (slow models). */
export type AsyncLane = 'batch' | 'background';

/**
 * A hosted model's client and prices in a lane, or why it has none there (the registry's
 * reason): what `rcb run --batch`, a slow model and the cloud's batch lane all ask.
 */
export function laneClient(
  hosted: HostedModels,
  id: string,
  lane: AsyncLane,
  temperature: number | undefined,
): { client: BatchClient; cost: CostModel } | { problem: string } {
  const hit = lane === 'background' ? hosted.resolveBackground(id, { temperature }) : hosted.resolveBatch(id, { temperature });
  if (hit) return hit;
  const entry = hosted.entry(id, { temperature });
  if (!entry) return { problem: 'not in the model registry' };
  if (lane === 'background')
    return { problem: entry.slow ? (longCallProblem(entry) ?? 'has no long-call lane') : 'not slow in the registry: it has no background mode here' };
  return { problem: batchProblem(entry) ?? 'cannot be batched' };
}

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

export function resolveRunModels(
  spec: Pick<RunSpec, 'models'>,
  pset: Pset,
  hosted: () => HostedModels,
  replays: Map<string, ModelClient> = new Map(),
): RunModels {
  const out: RunModels = { clients: new Map(), costs: new Map() };
  for (const m of spec.models) {
    const offline = offlineClient(m.id, pset);
    if (offline) out.clients.set(m.id, offline);
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
export function runModelCosts(
  spec: Pick<RunSpec, 'models'>,
  hosted: () => HostedModels,
  tokens: PromptTokenCache = SHARED_TOKEN_CACHE,
): Map<string, CostModel> {
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
    const lane = backgroundModels.includes(id) ? 'background' : 'batch';
    const batch = laneClient(h, id, lane, temperature);
    if ('problem' in batch) {
      throw new RunInputError(
        lane === 'background'
          ? `model "${id}" is ${batch.problem.replace(/registry/, "this deployment's registry")}`
          : `model "${id}" cannot go through a batch API: ${batch.problem}`,
      );
    }
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
export function runBatchCosts(
  spec: Pick<RunSpec, 'models'>,
  batchModels: readonly string[],
  hosted: () => HostedModels,
  tokens: PromptTokenCache = SHARED_TOKEN_CACHE,
): Map<string, CostModel> {
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

// ---- models named on the command line or in a sweep file ----

/** Clients of a run's models, by id, with what reports need of each and the prices of the paid ones. */
export interface ResolvedModels {
  clients: Map<string, ModelClient>;
  info: Record<string, ModelInfo>;
  costs: Map<string, CostModel>;
}

export interface HostedModelResolver {
  /** Resolve a registry id; undefined when the id is unknown. */
  resolve(id: string, overrides: { temperature?: number }): { client: ModelClient; info: ModelInfo; cost: CostModel } | undefined;
  /** Known ids, for the error message. */
  ids(): string[];
}

/** `--model` names as clients: the offline models by name, `replay:FILE`, and (through the registry) hosted models. */
export function resolveModels(
  ids: string[],
  pset: Pset,
  hosted: HostedModelResolver | null,
  overrides: { temperature?: number },
  papersSelected = false,
  /** The flag or file the ids came from, which an unknown id's error blames. */
  modelSource = '--model',
): ResolvedModels {
  const out: ResolvedModels = { clients: new Map(), info: {}, costs: new Map() };
  const add = (client: ModelClient, info: ModelInfo, cost?: CostModel) => {
    if (out.clients.has(client.id)) throw new UsageError(`model "${client.id}" is named twice`);
    out.clients.set(client.id, client);
    out.info[client.id] = info;
    if (cost) out.costs.set(client.id, cost);
  };
  for (const id of ids) {
    const offline = offlineClient(id, pset);
    if (offline) add(offline, { config: { name: id, offline: true } });
    else if (id.startsWith('replay:')) {
      const file = resolve(id.slice('replay:'.length));
      if (!existsSync(file)) throw new UsageError(`${modelSource} ${id}: ${file} does not exist (replay:FILE names a JSONL file of recorded answers)`);
      let models;
      try {
        models = replayModels(file);
      } catch (e) {
        throw new UsageError((e as Error).message);
      }
      const problems = replayProblems(file, pset, papersSelected);
      if (problems.length) throw new UsageError(`${problems.join('\n')}\n${problems.length} replay line(s) name no task of the pset at ${pset.root}`);
      for (const m of models) add(m, { config: { name: m.id, replay: file } });
    } else {
      const hit = hosted?.resolve(id, overrides);
      if (!hit) {
        const known = [...OFFLINE_MODELS, ...(hosted ? hosted.ids() : [])];
        throw new UsageError(
          `${unknownName(modelSource, 'model', id, known, 'in the model registry', 200)}; replay:FILE replays recorded answers (see \`rcb models\`)`,
        );
      }
      add(hit.client, hit.info, hit.cost);
    }
  }
  return out;
}

/** The shipped registry merged with a models file (`--models-file`), refused as a usage error. */
export function loadEntries(modelsFile?: string): ModelEntry[] {
  try {
    return loadRegistry({ userFile: modelsFile ? resolve(modelsFile) : undefined });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

/** Hosted models from the shipped registry merged with `--models-file`, keys from the environment. */
export function hostedModels(modelsFile?: string): HostedModels {
  return new HostedModels(loadEntries(modelsFile), envKeySource());
}

/**
 * The models `--batch` sends to their provider's batch API: every registry model of the run,
 * each of which must have one (offline and replay models have none). Shared by `rcb run` and
 * `rcb cloud run`.
 */
export function batchModelIds(models: ResolvedModels, hosted: HostedModels, temperature: number | undefined): string[] {
  const ids = [...models.costs.keys()];
  if (!ids.length) throw new UsageError('--batch needs a registry model (offline and replay models have no batch API)');
  const refused = ids.flatMap((id) => {
    const lane = laneClient(hosted, id, 'batch', temperature);
    return 'problem' in lane ? [`${id}: ${lane.problem}`] : [];
  });
  if (refused.length) throw new UsageError(`--batch: ${refused.join('; ')} (see \`rcb models\`)`);
  return ids;
}
