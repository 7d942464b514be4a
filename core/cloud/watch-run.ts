/**
 * Following a cloud run to its end (`rcb cloud run` without --detach): a line each time the
 * run's state changes, then the leaderboard Aggregate stored, and the exit code of `rcb run`.
 * One read of the execution and one of the run item per poll (the counters), never a scan.
 */
import type { BlobStore, RunStore } from '../store';
import { latestAttempt, type RunExecutions } from './execution-attempts';
import type { RunCounters } from './ports';
import { CLOUD_REPORTS } from './aggregate-run';
import { cloudKeys } from './payloads';
import { executionOpen, exitCodeOf, progressLine } from './run-progress';

export interface WatchRunDeps {
  executions: Pick<RunExecutions, 'describe'>;
  store: RunStore;
  counters?: RunCounters;
  blobs: BlobStore;
  /** Progress and the outcome (stderr). */
  note: (text: string) => void;
  /** The leaderboard (stdout). */
  print: (text: string) => void;
  sleep: (ms: number) => Promise<void>;
  pollMs: number;
}

/** Polls the execution `executionName` of the run until it ends; resolves with the exit code. */
export async function watchRun(deps: WatchRunDeps, runId: string, executionName: string): Promise<number> {
  let last = '';
  for (;;) {
    const execution = await deps.executions.describe(executionName);
    if (!execution) throw new Error(`execution ${executionName} of run ${runId} does not exist`);
    const run = await deps.store.getRun(runId);
    const line = await progressLine(deps.store, deps.counters, run);
    if (line !== last) deps.note(`${line}\n`);
    last = line;
    if (!executionOpen(execution.status)) {
      const succeeded = execution.status === 'SUCCEEDED';
      if (succeeded) {
        const board = await deps.blobs.get(cloudKeys.reportPrefix(runId) + CLOUD_REPORTS[0].file);
        if (board) deps.print(`\n${board.toString('utf8')}`);
      }
      const why = run?.error ? `: ${run.error}` : execution.error ? `: ${execution.error} ${execution.cause ?? ''}` : '';
      deps.note(`run ${run?.status ?? 'unknown'} (execution ${execution.status})${why}\n`);
      if (succeeded) deps.note(`read it with \`rcb cloud results ${runId} [--format ...]\`\n`);
      return exitCodeOf(execution.status, run?.status);
    }
    await deps.sleep(deps.pollMs);
  }
}

/**
 * `rcb cloud status RUN --wait`: follows the run's latest execution to its end, as `rcb cloud
 * run` does, and resolves with the same exit code (a CI job gates on it: docs/cloud.md#from-ci);
 * null when the run never started.
 */
export async function waitForRun(deps: WatchRunDeps & { executions: Pick<RunExecutions, 'describe' | 'status'> }, runId: string): Promise<number | null> {
  const latest = await latestAttempt(deps.executions, runId);
  if (!latest) return null;
  return watchRun(deps, runId, latest.name);
}
