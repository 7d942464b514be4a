/**
 * `rcb cloud cancel RUN [--now]`. Cancelling marks the run: the generator reads the status
 * before every paid call and CheckProgress ends generation on it, so what is answered is
 * still evaluated and reported. `now` also stops the latest execution at once.
 */
import type { RunStore } from '../store';
import { latestAttempt, type RunExecutions } from './execution-attempts';

const FINISHED = new Set(['succeeded', 'failed', 'cancelled', 'budget_exhausted']);

export interface CancelRunDeps {
  executions: Pick<RunExecutions, 'status' | 'stop'>;
  store: RunStore;
}

export type CancelOutcome =
  | { kind: 'no-run' }
  /** The run had ended: nothing changed (exit code 1). */
  | { kind: 'ended'; status: string; exitCode: 1; message: string }
  | { kind: 'cancelled'; stopped: boolean; exitCode: 0; message: string };

export async function cancelRun(deps: CancelRunDeps, runId: string, opts: { now?: boolean } = {}): Promise<CancelOutcome> {
  const run = await deps.store.getRun(runId);
  if (!run) return { kind: 'no-run' };
  if (FINISHED.has(run.status)) {
    return { kind: 'ended', status: run.status, exitCode: 1, message: `run ${runId} already ended (${run.status}); nothing to cancel` };
  }
  await deps.store.setRunStatus(runId, 'cancelled');
  if (!opts.now) {
    return {
      kind: 'cancelled',
      stopped: false,
      exitCode: 0,
      message: `run ${runId} cancelled: no new model calls; what is answered is evaluated and reported (\`rcb cloud status ${runId}\`)`,
    };
  }
  const latest = await latestAttempt(deps.executions, runId);
  await deps.executions.stop(latest?.name ?? runId, 'Cancelled', 'rcb cloud cancel --now');
  return {
    kind: 'cancelled',
    stopped: true,
    exitCode: 0,
    message: `run ${runId} cancelled and its execution stopped; finished answers and verdicts stay in the table`,
  };
}
