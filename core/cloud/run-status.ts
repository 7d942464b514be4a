/** `rcb cloud status RUN`: the run's latest execution and its progress, deployed or emulated. */
import type { BlobStore, RunStore } from '../store';
import type { PaperEnvironment, RunRecord } from '../records';
import { latestAttempt, type RunExecutions } from './execution-attempts';
import type { EnvironmentChecks, RunCounters } from './ports';
import { progressLine } from './run-progress';
import { readInfraErrors } from './aggregate-run';

export interface RunStatusDeps {
  executions: Pick<RunExecutions, 'status' | 'describe'>;
  store: RunStore;
  counters?: RunCounters;
  /** The shards' environment checks: papers that cannot run in the image are listed. */
  environments?: EnvironmentChecks;
  /** The run's artifacts: the infra_error tasks Aggregate recorded (`runs/<id>/infra-errors.json`) are listed. */
  blobs?: BlobStore;
}

/** The lines of the run's status, or null when neither the run nor an execution of it exists. */
export async function describeRunStatus(deps: RunStatusDeps, runId: string): Promise<string[] | null> {
  const run = await deps.store.getRun(runId);
  const latest = await latestAttempt(deps.executions, runId);
  const execution = latest ? await deps.executions.describe(latest.name) : null;
  if (!run && !execution) return null;
  const lines = [`run ${runId}`];
  if (execution) {
    const when = `started ${execution.startDate?.toISOString() ?? '?'}${execution.stopDate ? `, stopped ${execution.stopDate.toISOString()}` : ''}`;
    const attempt = latest && latest.attempt > 1 ? ` attempt ${latest.attempt}` : '';
    lines.push(`execution${attempt}: ${execution.status} (${when})${execution.error ? `, error ${execution.error}` : ''}`);
  } else lines.push('execution: none');
  const broken = run ? await brokenPapers(deps, run) : [];
  // env_broken tasks are never judged: they are out of the totals, as out of the scores.
  lines.push(`progress: ${await progressLine(deps.store, deps.counters, run, new Set(broken.map((p) => p.paper)))}`);
  if (run?.error) lines.push(`error: ${run.error}`);
  if (run) lines.push(...(await envBrokenLines(deps, run, broken)));
  if (run && deps.blobs) lines.push(...(await infraErrorLines(deps.store, deps.blobs, run, new Set(broken.map((p) => p.paper)))));
  return lines;
}

/**
 * The infra_error tasks of the run's latest aggregation that are still unjudged (a restart
 * that judged them clears them), with their rate over the run's tasks (env_broken ones aside)
 * and one line per shard that failed every attempt.
 */
async function infraErrorLines(store: RunStore, blobs: BlobStore, run: RunRecord, broken: ReadonlySet<string>): Promise<string[]> {
  const infra = await readInfraErrors(blobs, run.runId);
  if (!infra?.shards.length) return [];
  const judged = new Set((await store.listVerdicts(run.runId)).map((v) => v.taskId));
  const shards = infra.shards.map((s) => ({ ...s, taskIds: s.taskIds.filter((id) => !judged.has(id)) })).filter((s) => s.taskIds.length);
  if (!shards.length) return [];
  const total = (await store.listTasks(run.runId)).filter((t) => !broken.has(t.paper)).length;
  const n = new Set(shards.flatMap((s) => s.taskIds)).size;
  return [
    `infra_error: ${n} of ${total} task(s) (${((100 * n) / Math.max(1, total)).toFixed(2)}% infra error rate), out of the scores, in ${shards.length} shard(s) that failed every attempt: start the run again to evaluate them`,
    ...shards.map((s) => {
      const part = (s.shard.parts ?? 1) > 1 ? ` part ${(s.shard.part ?? 0) + 1}/${s.shard.parts}` : '';
      return `infra_error: shard ${s.shard.paper}${s.shard.model ? ` x ${s.shard.model}` : ''}${part}: ${s.taskIds.length} task(s), ${s.error}${s.cause ? ` (${s.cause.slice(0, 200)})` : ''}`;
    }),
  ];
}

async function brokenPapers(deps: RunStatusDeps, run: RunRecord): Promise<PaperEnvironment[]> {
  const papers = run.environment?.papers ?? (await deps.environments?.listRunPaperEnvironments(run.runId)) ?? [];
  return papers.filter((p) => !p.runs);
}

/** One line per paper whose shards found it cannot run in the image: its tasks are env_broken. */
async function envBrokenLines(deps: RunStatusDeps, run: RunRecord, broken: PaperEnvironment[]): Promise<string[]> {
  if (!broken.length) return [];
  const tasks = await deps.store.listTasks(run.runId);
  return broken.map((p) => {
    const n = tasks.filter((t) => t.paper === p.paper).length;
    return `env_broken: ${p.paper}: ${n} task(s) untested and out of the scores (${p.reason ?? 'its oracle fails in the image'})`;
  });
}
