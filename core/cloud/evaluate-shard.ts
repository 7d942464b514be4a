/**
 * Evaluate one shard: every answered task of one paper in one run (of one model and slice,
 * when the shard names them: core/cloud/shard-plan.ts), through the
 * same evaluate use case (and so the same splicing, executor and judge) as a local run.
 * Verdicts are first-write-wins, so a retried shard tests only what is not yet judged.
 *
 * With `environment`, the shard first checks its paper's environment in its image
 * (shard-environment.ts, once per image across shards and runs); a paper that cannot run
 * there gets no verdicts: its tasks are env_broken, which AggregateRun and the status read
 * from the run's recorded checks.
 */
import type { Pset } from '../types';
import type { TaskRecord } from '../records';
import type { TestExecutor } from '../executor';
import type { BlobStore, RunStore } from '../store';
import { evaluate } from '../run/evaluate';
import type { Progress } from '../run/progress';
import { cloudKeys, type ShardInput, type ShardRef } from './payloads';
import { shardSlice, shardTasks } from './shard-plan';
import type { EnvironmentChecks, RunCounters } from './ports';
import { checkShardEnvironment, type ShardEnvironment } from './shard-environment';

export interface EvaluateShardDeps {
  store: RunStore;
  blobs: BlobStore;
  executor: TestExecutor;
  progress?: Progress;
  /** Progress counters on the run item: verdicts written are counted. @default none */
  counters?: RunCounters;
  /** Check the paper's environment first, in this image. @default no check */
  environment?: {
    checks: EnvironmentChecks;
    /** `<image digest>@<python>`, or null when the digest is unknown (checked, not kept per image). */
    image: string | null;
    python: string;
    /** How long one shard's claim on a check holds off the others, ms. @default the run's test time limit + 60 s */
    leaseMs?: number;
    pollMs?: number;
  };
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
  /** The paper's environment check, when the shard made one; `ran`: this shard ran its oracle (false: the image's stored check). */
  environment?: ShardEnvironment['result'] & { ran: boolean };
  /** Tasks left untested because the paper cannot run in the image. */
  envBroken: number;
}

/** Some answered tasks got no verdict (the executor failed on them): an infrastructure failure, to retry. */
export class ShardIncompleteError extends Error {
  constructor(
    readonly runId: string,
    readonly paper: string,
    readonly missing: string[],
  ) {
    super(`shard ${paper} of run ${runId}: ${missing.length} answered task(s) have no verdict (executor failure), e.g. ${missing.slice(0, 3).join(', ')}`);
    this.name = 'ShardIncompleteError';
  }
}

/** What one shard evaluates: the run, the shard, the run's pset, and its tasks when the caller has them. */
export type EvaluateShardInput = ShardInput &
  Omit<ShardRef, 'paper'> & {
    pset: Pset;
    /**
     * Every task of the run, as planned (the plan manifest the container has read with the
     * pset); the shard takes its own. @default listed from the store
     */
    runTasks?: TaskRecord[];
    /** The run's test time limit, seconds (the run record the caller has read). @default read from the store */
    timeoutSec?: number;
  };

export async function evaluateShard(deps: EvaluateShardDeps, input: EvaluateShardInput): Promise<EvaluateShardResult> {
  const { runId, paper } = input;
  // A shard reads what is its own: its tasks' answers and verdicts, never the whole run's
  // (a sweep's 800 to 1,300 shards each listing 34,000 verdicts with their logs).
  const tasks = shardTasks(input.runTasks ?? (await deps.store.listTasks(runId)), input);
  const verdictsKey = cloudKeys.shardVerdicts(runId, paper, shardSlice(input));
  let checked: EvaluateShardResult['environment'];
  if (deps.environment) {
    const env = deps.environment;
    const timeoutSec = input.timeoutSec ?? (await deps.store.getRun(runId))?.spec.timeoutSec ?? 600;
    const environment = await checkShardEnvironment(
      { executor: deps.executor, checks: env.checks },
      {
        runId,
        pset: input.pset,
        paper,
        image: env.image,
        python: env.python,
        // One owner per shard: its retry may take its own claim back at once.
        owner: `${runId}/${paper}/${shardSlice(input) ?? 'all'}`,
        leaseMs: env.leaseMs ?? (timeoutSec + 60) * 1000,
        pollMs: env.pollMs,
      },
    );
    checked = { ...environment.result, ran: environment.ran };
    if (!environment.result.runs) {
      deps.progress?.note(
        `env_broken: ${paper} cannot run in this image (${environment.result.reason}): its ${tasks.length} task(s) are left untested and out of the scores`,
      );
      await deps.blobs.put(verdictsKey, JSON.stringify({ runId, paper, environment: checked, verdicts: [] }, null, 1), 'application/json');
      return { runId, paper, tasks: tasks.length, answered: 0, judged: 0, verdictsKey, environment: checked, envBroken: tasks.length };
    }
  }
  const completions = await deps.store.getCompletions(tasks.map((t) => t.taskId));
  const items = tasks.flatMap((task) => {
    const completion = completions.get(task.taskId);
    return completion ? [{ task, completion }] : [];
  });
  const ids = tasks.map((t) => t.taskId);
  // Judged by an earlier attempt of the shard: evaluate skips them (and keeps this set current).
  const judged = new Set((await deps.store.getVerdicts(runId, ids)).keys());
  const written = await evaluate({ store: deps.store, executor: deps.executor, progress: deps.progress }, { runId, pset: input.pset, items, judged });
  await deps.counters?.addCounts(runId, { judged: written.length });

  // Re-read, not `written`: a verdict another writer stored first is the one that stands.
  const verdicts = [...(await deps.store.getVerdicts(runId, ids)).values()];
  const judgedIds = new Set(verdicts.map((v) => v.taskId));
  await deps.blobs.put(verdictsKey, JSON.stringify({ runId, paper, ...(checked ? { environment: checked } : {}), verdicts }, null, 1), 'application/json');
  const missing = items.filter((i) => !judgedIds.has(i.task.taskId)).map((i) => i.task.taskId);
  if (missing.length) throw new ShardIncompleteError(runId, paper, missing);
  return {
    runId,
    paper,
    tasks: tasks.length,
    answered: items.length,
    judged: written.length,
    verdictsKey,
    ...(checked ? { environment: checked } : {}),
    envBroken: 0,
  };
}
