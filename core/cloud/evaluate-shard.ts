/**
 * Evaluate one shard: every answered task of one paper in one run (of one model and slice,
 * when the shard names them: core/cloud/shard-plan.ts), through the
 * same evaluate use case (and so the same splicing, executor and judge) as a local run.
 * Verdicts are first-write-wins, so a retried shard tests only what is not yet judged.
 */
import type { Pset } from '../types';
import type { TestExecutor } from '../executor';
import type { BlobStore, RunStore } from '../store';
import { evaluate } from '../run/evaluate';
import type { Progress } from '../run/progress';
import { cloudKeys, type ShardInput, type ShardRef } from './payloads';
import { shardSlice, shardTasks } from './shard-plan';
import type { RunCounters } from './ports';

export interface EvaluateShardDeps {
  store: RunStore;
  blobs: BlobStore;
  executor: TestExecutor;
  progress?: Progress;
  /** Progress counters on the run item: verdicts written are counted. @default none */
  counters?: RunCounters;
}

export interface EvaluateShardResult {
  runId: string;
  paper: string;
  /** Tasks of the shard. */
  tasks: number;
  /** Tasks with a completion (the ones evaluation can judge). */
  answered: number;
  /** Verdicts written by this invocation. */
  judged: number;
  /** Blob key of the shard's verdicts and logs. */
  verdictsKey: string;
}

/** Some answered tasks got no verdict (the executor failed on them): an infrastructure failure, to retry. */
export class ShardIncompleteError extends Error {
  constructor(readonly runId: string, readonly paper: string, readonly missing: string[]) {
    super(`shard ${paper} of run ${runId}: ${missing.length} answered task(s) have no verdict (executor failure), e.g. ${missing.slice(0, 3).join(', ')}`);
    this.name = 'ShardIncompleteError';
  }
}

export async function evaluateShard(deps: EvaluateShardDeps, input: ShardInput & Omit<ShardRef, 'paper'> & { pset: Pset }): Promise<EvaluateShardResult> {
  const { runId, paper } = input;
  const tasks = shardTasks(await deps.store.listTasks(runId), input);
  const completions = await deps.store.getCompletions(tasks.map((t) => t.taskId));
  const items = tasks.flatMap((task) => {
    const completion = completions.get(task.taskId);
    return completion ? [{ task, completion }] : [];
  });
  const written = await evaluate({ store: deps.store, executor: deps.executor, progress: deps.progress }, { runId, pset: input.pset, items });
  await deps.counters?.addCounts(runId, { judged: written.length });

  const ids = new Set(tasks.map((t) => t.taskId));
  const verdicts = (await deps.store.listVerdicts(runId)).filter((v) => ids.has(v.taskId));
  const judgedIds = new Set(verdicts.map((v) => v.taskId));
  const verdictsKey = cloudKeys.shardVerdicts(runId, paper, shardSlice(input));
  await deps.blobs.put(verdictsKey, JSON.stringify({ runId, paper, verdicts }, null, 1), 'application/json');
  const missing = items.filter((i) => !judgedIds.has(i.task.taskId)).map((i) => i.task.taskId);
  if (missing.length) throw new ShardIncompleteError(runId, paper, missing);
  return { runId, paper, tasks: tasks.length, answered: items.length, judged: written.length, verdictsKey };
}
