/**
 * PlanRun: a run spec and its uploaded inputs become the run record, its tasks and one
 * generation message per task still to answer. Planning the same run again (a retried
 * Lambda, a resumed run) writes nothing new and re-sends only unanswered tasks, which the
 * idempotent generator ignores if a first copy got there, and the tasks whose answer was an
 * error, reopened while under their cap of attempts. The tasks of batch-mode models
 * (`input.batch`) are not enqueued: the plan manifest names those models and the batch lane
 * (core/cloud/batch-round.ts) answers them.
 */
import type { BlobStore, RunStore } from '../store';
import type { TaskRecord } from '../records';
import type { Prompt } from '../model';
import { MAX_ANSWER_ATTEMPTS, reopenFailedAnswers, type CostModel } from '../run/generate';
import { openRun, planTasks } from '../run/plan';
import { runId as computeRunId } from '../ids';
import { buildPrompt } from '../prompt/template';
import { findSnippet } from '../prompt/mask';
import type { RunCounters, TaskQueue } from './ports';
import { MAX_SHARDS_DEFAULT, planShards, shardTasks, type ShardSizing } from './shard-plan';
import { z } from 'zod';
import {
  cloudKeys,
  evaluationPinSchema,
  shardRefSchema,
  parsePayload,
  type EvaluationPin,
  type PlanManifest,
  type PlanRunResult,
  type RunWorkflowInput,
  type ShardRef,
} from './payloads';
import { loadBundledPset, loadPromptTemplateBlob, RunInputError } from './pset-bundle';
import { asyncLanes } from '../run/lanes';

export interface PlanCloudRunDeps {
  store: RunStore;
  blobs: BlobStore;
  queue: TaskQueue;
  /** Prices of the paid models, by model id; offline models have none. */
  costs?: Map<string, CostModel>;
  /** Batch prices of the batch-mode models: their worst case is priced with these. @default their interactive prices */
  batchCosts?: Map<string, CostModel>;
  /** Slow models of the spec (the registry's `slow: true`): left to the batch lane in background mode unless in batch mode. @default none */
  slowModels?: ReadonlySet<string>;
  scratchDir: string;
  /** Progress counters on the run item, set from what is stored. @default none (CheckProgress scans) */
  counters?: RunCounters;
  /** How shards are sized. @default DEFAULT_SHARD_SIZING */
  shardSizing?: ShardSizing;
  /** Answers a task may get in all when the earlier ones were errors (as a local run). @default MAX_ANSWER_ATTEMPTS */
  maxAnswerAttempts?: number;
  /**
   * The deployed evaluator: the task definition revision and its image (RCB_TASK_DEFINITION,
   * RCB_EVALUATION_IMAGE). A run's first PlanRun pins them; its later ones keep that pin.
   * @default none: nothing pinned (planning outside a deployment: tests, bench, image checks)
   */
  evaluation?: { taskDefinitionArn: string; image: string; functions?: Record<string, string> };
  /**
   * Most shards one run may have: the largest sweep the deployment admits (RCB_MAX_SHARDS,
   * config.ts maxShards, whose worst-case history test/infra/history-bound.test.ts counts).
   * @default MAX_SHARDS_DEFAULT
   */
  maxShards?: number;
  /** Generation deadline of a run that sets none, seconds (RCB_GENERATION_TIMEOUT_SEC). @default 24 h */
  defaultDeadlineSec?: number;
  now?: () => Date;
}

export { MAX_SHARDS_DEFAULT };

/** A sweep with more shards than the deployment admits; says how to split it. */
export class SweepTooLargeError extends RunInputError {
  constructor(
    readonly shards: number,
    readonly maxShards: number,
    readonly models: number,
  ) {
    const perRun = Math.max(1, Math.floor((maxShards * models) / shards));
    super(
      `the run has ${shards} evaluation shards, more than the ${maxShards} this deployment admits (rcb:maxShards): split the sweep into runs of at most ${perRun} model(s) each (or fewer papers), or raise rcb:maxShards after checking the history bound (docs/cloud.md)`,
    );
    this.name = 'SweepTooLargeError';
  }
}

/**
 * The run's pin: the one its first PlanRun stored, else the deployed evaluator, stored now.
 * A restart after a deploy keeps evaluating with the revision the run began with.
 */
export async function pinEvaluation(
  blobs: BlobStore,
  runId: string,
  deployed: { taskDefinitionArn: string; image: string; functions?: Record<string, string> },
  now: Date,
): Promise<EvaluationPin> {
  const key = cloudKeys.evaluationPin(runId);
  const stored = await blobs.get(key);
  if (stored) return parsePayload(evaluationPinSchema, JSON.parse(stored.toString('utf8')), key);
  const pin: EvaluationPin = { ...deployed, pinnedAt: now.toISOString() };
  await blobs.put(key, JSON.stringify(pin), 'application/json');
  return pin;
}

/** The shards an execution evaluates, as PlanRun wrote them (`PlanRunResult.shardManifestKey`). */
export async function readShardManifest(blobs: BlobStore, key: string): Promise<ShardRef[]> {
  const raw = await blobs.get(key);
  if (!raw) throw new RunInputError(`no shard manifest at ${key}`);
  return parsePayload(z.array(shardRefSchema), JSON.parse(raw.toString('utf8')), key);
}

/** The shards with at least one task still unjudged: a restarted run evaluates only those. */
export function shardsToEvaluate(shards: ShardRef[], tasks: TaskRecord[], judged: ReadonlySet<string>): ShardRef[] {
  if (!judged.size) return shards;
  return shards.filter((s) => shardTasks(tasks, s).some((t) => !judged.has(t.taskId)));
}

/** The worst-case cost of the run's unanswered tasks exceeds its budget, and planning was not forced. */
export class BudgetExceededError extends Error {
  constructor(
    readonly estimatedUsd: number,
    readonly budgetUsd: number,
  ) {
    super(`estimated worst-case cost $${estimatedUsd.toFixed(4)} exceeds the budget of $${budgetUsd.toFixed(2)} (plan with force to run anyway)`);
    this.name = 'BudgetExceededError';
  }
}

/**
 * The worst case of the tasks' calls, priced per distinct prompt: a prompt does not depend
 * on the model or the sample, so each is built once, and each model prices it once and
 * multiplies by its tasks (a 10-model x 5-sample sweep builds and prices a fiftieth of what
 * a per-task loop would; costs that share a tokenizer also share its counts, run-models.ts).
 */
export function worstCaseOfTasks(tasks: TaskRecord[], costs: Map<string, CostModel> | undefined, promptOf: (t: TaskRecord) => Prompt): number {
  if (!costs?.size) return 0;
  const byPrompt = new Map<string, { task: TaskRecord; perModel: Map<string, number> }>();
  for (const t of tasks) {
    if (!costs.has(t.model)) continue;
    const key = `${t.paper}\0${t.file}\0${t.snippet}`;
    let group = byPrompt.get(key);
    if (!group) byPrompt.set(key, (group = { task: t, perModel: new Map() }));
    group.perModel.set(t.model, (group.perModel.get(t.model) ?? 0) + 1);
  }
  let total = 0;
  for (const { task, perModel } of byPrompt.values()) {
    const prompt = promptOf(task);
    for (const [model, count] of perModel) total += costs.get(model)!.worstCase(prompt) * count;
  }
  return total;
}

export async function planCloudRun(deps: PlanCloudRunDeps, input: RunWorkflowInput): Promise<PlanRunResult> {
  const now = deps.now ?? (() => new Date());
  const { spec } = input;
  const expectedId = computeRunId(spec);
  if (expectedId !== input.runId) throw new RunInputError(`run id ${input.runId} does not match its spec (expected ${expectedId})`);
  const promptTemplateKey = cloudKeys.promptTemplate(spec.promptTemplateDigest);
  const [pset, template] = await Promise.all([
    loadBundledPset(deps.blobs, spec.psetRoot, deps.scratchDir, { psetDigest: spec.psetDigest, papers: spec.papers }),
    loadPromptTemplateBlob(deps.blobs, promptTemplateKey, spec.promptTemplateDigest),
  ]);
  const missing = spec.models.filter((m) => !input.models[m.id]).map((m) => m.id);
  if (missing.length) throw new RunInputError(`no model info for ${missing.join(', ')}`);
  const batchApiModels = new Set(input.batch?.models ?? []);
  const strangers = [...batchApiModels].filter((id) => !spec.models.some((m) => m.id === id));
  if (strangers.length) throw new RunInputError(`batch mode names ${strangers.join(', ')}, which the run spec does not`);
  const { background } = asyncLanes(
    spec.models.map((m) => m.id),
    batchApiModels,
    (id) => !!deps.slowModels?.has(id),
  );
  const batch =
    batchApiModels.size || background.length ? { ...input.batch, models: [...batchApiModels], ...(background.length ? { background } : {}) } : undefined;
  const batchModels = new Set([...batchApiModels, ...background]);

  const tasks = planTasks(pset, spec);
  const allShards = planShards(tasks, deps.shardSizing);
  const maxShards = deps.maxShards ?? MAX_SHARDS_DEFAULT;
  if (allShards.length > maxShards) throw new SweepTooLargeError(allShards.length, maxShards, spec.models.length);
  const existing = await openRun(deps.store, { runId: input.runId, spec, pset, models: input.models }, now);

  // A restarted run asks again for the answers that were errors (dead-lettered, provider
  // failures), under the same cap per task as a local run; an answer is never asked again.
  const reopened = await reopenFailedAnswers(deps.store, input.runId, tasks, deps.maxAnswerAttempts ?? MAX_ANSWER_ATTEMPTS);
  const answered = await deps.store.getCompletions(tasks.map((t) => t.taskId));
  const papers = new Map(pset.papers.map((p) => [p.meta.id, p]));
  const todo = tasks.filter((t) => !answered.has(t.taskId));
  const costs = new Map(deps.costs ?? []);
  for (const id of batchApiModels) {
    const batchCost = deps.batchCosts?.get(id);
    if (batchCost) costs.set(id, batchCost);
  }
  const estimatedCostUsd = worstCaseOfTasks(todo, costs, (t) => {
    const paper = papers.get(t.paper)!;
    return buildPrompt(template, paper, findSnippet(paper, t.snippet, t.file), spec.withPaper);
  });
  const budget = spec.budgetUsd;
  if (budget !== null && !input.force && estimatedCostUsd > budget - existing.spentUsd) {
    throw new BudgetExceededError(estimatedCostUsd, budget);
  }

  await deps.store.putTasks(input.runId, tasks);
  const manifest: PlanManifest = { runId: input.runId, psetKey: spec.psetRoot, promptTemplateKey, tasks, ...(batch ? { batch } : {}) };
  await deps.blobs.put(cloudKeys.planManifest(input.runId), JSON.stringify(manifest), 'application/json');
  if (deps.counters) {
    // Absolute, from the completions read above: a restarted run's counters start true.
    await deps.counters.setTotal(input.runId, tasks.length);
    const stored = await deps.counters.getCounts(input.runId);
    const failed = [...answered.values()].filter((c) => c.error).length;
    // Reopening dropped those tasks' verdicts too: the judged count follows (restarts only).
    const judged = reopened.size ? { judged: (await deps.store.listVerdicts(input.runId)).length - (stored?.judged ?? 0) } : {};
    await deps.counters.addCounts(input.runId, { settled: answered.size - (stored?.settled ?? 0), failed: failed - (stored?.failed ?? 0), ...judged });
  }
  await deps.store.setRunStatus(input.runId, 'generating');
  // Messages go last: a generator may start at once and needs the manifest and the run.
  const lanes = todo.filter((t) => !batchModels.has(t.model));
  await deps.queue.send(
    lanes.map((t) => {
      const priorAttempts = reopened.get(t.taskId);
      return { message: { runId: input.runId, taskId: t.taskId, ...(priorAttempts ? { priorAttempts } : {}) }, model: t.model };
    }),
  );

  // A restarted run evaluates only the shards with a task still unjudged (a shard that failed
  // every attempt, whose tasks were infra_error, or one a cancelled run never reached).
  const judged = new Set((await deps.store.listVerdicts(input.runId)).map((v) => v.taskId));
  const shards = shardsToEvaluate(allShards, tasks, judged);
  const shardManifestKey = cloudKeys.shardManifest(input.runId);
  await deps.blobs.put(shardManifestKey, JSON.stringify(shards), 'application/json');
  const pin = deps.evaluation ? await pinEvaluation(deps.blobs, input.runId, deps.evaluation, now()) : undefined;
  return {
    runId: input.runId,
    taskCount: tasks.length,
    enqueued: lanes.length,
    estimatedCostUsd,
    batchTasks: todo.length - lanes.length,
    shardCount: shards.length,
    shardManifestKey,
    deadlineSec: input.deadlineSec ?? deps.defaultDeadlineSec ?? 24 * 3600,
    ...(pin ? { taskDefinitionArn: pin.taskDefinitionArn, image: pin.image } : {}),
  };
}
