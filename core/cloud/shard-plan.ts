/**
 * Evaluation shards sized by work. A shard of one paper with every model and sample can hold
 * a thousand candidates in a sweep (a 20-snippet paper, 10 models, 5 samples), hours of tests
 * against one task's time limit; so a shard is one paper and one model, cut further into
 * equal slices when its candidates times the expected test time pass a target. Slices take
 * every `parts`-th task in task-id order, so they are stable across a restarted run.
 */
import type { TaskRecord } from '../records';
import type { ShardRef } from './payloads';

export interface ShardSizing {
  /** Expected seconds of one candidate's test (the paper's median, when known). */
  testSecPerCandidate: number;
  /** Work one shard should hold, seconds: well inside the shard task's timeout. */
  targetSec: number;
}

/**
 * Shards a run may have when the deployment sets no limit (config.ts maxShards): a 32-model
 * x 5-sample sweep of the 20 papers is 640 to about 1,300 shards; 5,000 leaves room for a
 * larger pset. PlanRun refuses more (core/cloud/plan-cloud-run.ts SweepTooLargeError).
 */
export const MAX_SHARDS_DEFAULT = 5000;

/** A warm executor's typical test is a few seconds; a shard aims at 20 minutes of them (the task timeout is 2 h). */
export const DEFAULT_SHARD_SIZING: ShardSizing = { testSecPerCandidate: 5, targetSec: 20 * 60 };

/** The shards of a run's tasks, paper by paper, model by model, in task order of first appearance. */
export function planShards(
  tasks: TaskRecord[],
  sizing: ShardSizing = DEFAULT_SHARD_SIZING,
  secPerCandidate?: (paper: string) => number | undefined,
): ShardRef[] {
  const groups = new Map<string, { paper: string; model: string; count: number }>();
  for (const t of tasks) {
    const key = `${t.paper}\0${t.model}`;
    const g = groups.get(key);
    if (g) g.count++;
    else groups.set(key, { paper: t.paper, model: t.model, count: 1 });
  }
  const shards: ShardRef[] = [];
  for (const { paper, model, count } of groups.values()) {
    const parts = slicesOf(count, secPerCandidate?.(paper) ?? sizing.testSecPerCandidate, sizing);
    for (let part = 0; part < parts; part++) shards.push(parts === 1 ? { paper, model } : { paper, model, part, parts });
  }
  return shards;
}

/** Slices of one paper and model's `candidates`, each at most the sizing's target of work. */
function slicesOf(candidates: number, secPerCandidate: number, sizing: ShardSizing): number {
  return Math.max(1, Math.ceil((candidates * secPerCandidate) / sizing.targetSec));
}

/**
 * How many shards `planShards` makes of a run, before its tasks exist (the infrastructure
 * estimate): every model runs every paper, `candidatesPerPaper[i]` candidates (snippets x
 * samples) of paper i each.
 */
export function plannedShardCount(candidatesPerPaper: number[], models: number, sizing: ShardSizing = DEFAULT_SHARD_SIZING): number {
  return models * candidatesPerPaper.reduce((n, c) => n + (c > 0 ? slicesOf(c, sizing.testSecPerCandidate, sizing) : 0), 0);
}

/** The tasks of one shard. */
export function shardTasks(tasks: TaskRecord[], shard: ShardRef): TaskRecord[] {
  const mine = tasks.filter((t) => t.paper === shard.paper && (shard.model === undefined || t.model === shard.model));
  const parts = shard.parts ?? 1;
  if (parts === 1) return mine;
  const part = shard.part ?? 0;
  return [...mine].sort((a, b) => a.taskId.localeCompare(b.taskId)).filter((_, i) => i % parts === part);
}

/** A short, key-safe name of a shard's slice (for its verdicts file), or undefined for a whole paper. */
export function shardSlice(shard: ShardRef): string | undefined {
  if (shard.model === undefined) return undefined;
  const model = shard.model.replace(/[^A-Za-z0-9._-]+/g, '_');
  return (shard.parts ?? 1) > 1 ? `${model}-${(shard.part ?? 0) + 1}of${shard.parts}` : model;
}
