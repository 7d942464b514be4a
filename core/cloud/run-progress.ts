/**
 * A cloud run's progress as the commands print it (`rcb cloud run` while it follows a run,
 * `rcb cloud status`), and the exit code of a run that ended: one place, so the deployed
 * and the emulated cloud report alike.
 */
import type { RunStore } from '../store';
import type { RunRecord, RunStatus } from '../records';
import { splitRunnable } from '../scoring';
import type { ExecutionStatus } from './execution-attempts';
import type { RunCounters } from './ports';

export interface RunProgress {
  total: number;
  /** Tasks with a completion (answered or failed for good). */
  answered: number;
  failed: number;
  judged: number;
}

/**
 * The run item's counters when it has them (one read per poll), else the items themselves
 * (a run planned before counters existed). Duplicate deliveries can count a task twice:
 * no count is shown above the total.
 * `envBroken`: papers the shards found cannot run in the image (the cloud's environment
 * checks). The counters count their tasks, which are never judged, so with any such paper
 * the items are counted instead, without those papers' tasks.
 */
export async function readProgress(
  store: RunStore,
  counters: RunCounters | undefined,
  runId: string,
  envBroken: ReadonlySet<string> = new Set(),
): Promise<RunProgress> {
  const counts = counters && envBroken.size === 0 ? await counters.getCounts(runId) : null;
  if (counts) {
    const cap = (n: number) => Math.min(n, counts.total);
    return { total: counts.total, answered: cap(counts.settled), failed: cap(counts.failed), judged: cap(counts.judged) };
  }
  // Counted over the papers that run in the run's environment: env_broken tasks are never run.
  const run = await store.getRun(runId);
  const all = await store.listTasks(runId);
  const tasks = (run ? splitRunnable(run, all).runnable : all).filter((t) => !envBroken.has(t.paper));
  const completions = await store.getCompletions(tasks.map((t) => t.taskId));
  const ids = new Set(tasks.map((t) => t.taskId));
  const verdicts = (await store.listVerdicts(runId)).filter((v) => ids.has(v.taskId));
  return { total: tasks.length, answered: completions.size, failed: [...completions.values()].filter((c) => c.error).length, judged: verdicts.length };
}

/** One line of a run's status, progress and spend; a run not yet planned reads `not planned yet`. */
export function formatProgress(run: RunRecord | null, p: RunProgress | null): string {
  if (!run || !p) return 'not planned yet';
  const budget = run.spec.budgetUsd;
  const spend = run.spentUsd > 0 || budget !== null ? `, spend $${run.spentUsd.toFixed(4)}${budget !== null ? ` of $${budget.toFixed(2)}` : ''}` : '';
  return `${run.status}: ${p.answered}/${p.total} answered${p.failed ? ` (${p.failed} failed)` : ''}, ${p.judged}/${p.total} judged${spend}`;
}

/** The progress line of the run as stored now. */
export async function progressLine(
  store: RunStore,
  counters: RunCounters | undefined,
  run: RunRecord | null,
  envBroken?: ReadonlySet<string>,
): Promise<string> {
  return formatProgress(run, run ? await readProgress(store, counters, run.runId, envBroken) : null);
}

/** Exit codes of `rcb run`, by the run's final status: 0 succeeded, 3 budget exhausted, 4 succeeded with infra errors (start it again), 1 otherwise. */
export const EXIT_BY_STATUS: Readonly<Record<RunStatus, number>> = {
  planned: 1,
  generating: 1,
  evaluating: 1,
  aggregating: 1,
  succeeded: 0,
  succeeded_with_errors: 4,
  budget_exhausted: 3,
  cancelled: 1,
  failed: 1,
};

/**
 * Exit code of a run whose execution ended: an execution that did not succeed is 1 whatever
 * the run item says (it may still read `generating`); a succeeded one takes the run's status.
 */
export function exitCodeOf(execution: ExecutionStatus, runStatus: RunStatus | undefined): number {
  if (execution !== 'SUCCEEDED') return 1;
  return runStatus === undefined ? 0 : EXIT_BY_STATUS[runStatus];
}

/** An execution still going: RUNNING, or failed and waiting to be redriven. */
export function executionOpen(status: ExecutionStatus): boolean {
  return status === 'RUNNING' || status === 'PENDING_REDRIVE';
}
