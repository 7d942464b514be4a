/** `rcb cloud status RUN`: the run's latest execution and its progress, deployed or emulated. */
import type { RunStore } from '../store';
import type { PaperEnvironment, RunRecord } from '../records';
import { latestAttempt, type RunExecutions } from './execution-attempts';
import type { EnvironmentChecks, RunCounters } from './ports';
import { progressLine } from './run-progress';

export interface RunStatusDeps {
  executions: Pick<RunExecutions, 'status' | 'describe'>;
  store: RunStore;
  counters?: RunCounters;
  /** The shards' environment checks: papers that cannot run in the image are listed. */
  environments?: EnvironmentChecks;
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
  return lines;
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
