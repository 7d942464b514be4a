/**
 * Aggregate: score the run, write its reports to the blob store and set its final status.
 * The reports are the ones `rcb run` writes (strict leaderboard, official overall_stats.json)
 * plus JSON, CSV and markdown, so a cloud run reads like a local one.
 */
import type { BlobStore, RunStore } from '../store';
import { LEADERBOARD, OFFICIAL_STATS, writeRunOutputs, type RunOutput } from '../run/run-outputs';
import { cloudKeys, type AggregateResult } from './payloads';
import { RunInputError } from './pset-bundle';

/** Report files written under `runs/<runId>/reports/`. */
export const CLOUD_REPORTS: RunOutput[] = [
  LEADERBOARD,
  { file: 'report.json', format: 'json', judge: 'strict', contentType: 'application/json' },
  { file: 'report.csv', format: 'csv', judge: 'strict', contentType: 'text/csv' },
  { file: 'report.md', format: 'markdown', judge: 'strict', contentType: 'text/markdown' },
  OFFICIAL_STATS,
];

/** Tasks without a verdict in a run that was neither stopped by its budget nor cancelled. */
export class IncompleteRunError extends Error {
  constructor(runId: string, missing: number, total: number) {
    super(`run ${runId}: ${missing} of ${total} task(s) have no verdict`);
    this.name = 'IncompleteRunError';
  }
}

export async function aggregateRun(deps: { store: RunStore; blobs: BlobStore }, runId: string): Promise<AggregateResult> {
  const run = await deps.store.getRun(runId);
  if (!run) throw new RunInputError(`no run ${runId} in the run store`);
  await deps.store.setRunStatus(runId, 'aggregating');
  const reportPrefix = cloudKeys.reportPrefix(runId);
  await writeRunOutputs(deps.store, runId, (r, text) => deps.blobs.put(reportPrefix + r.file, text, r.contentType), CLOUD_REPORTS);
  const tasks = await deps.store.listTasks(runId);
  const verdicts = await deps.store.listVerdicts(runId);
  const judged = new Set(verdicts.map((v) => v.taskId));
  const missing = tasks.filter((t) => !judged.has(t.taskId)).length;
  // The status before aggregation says why a run may be incomplete.
  let status: AggregateResult['status'] = 'succeeded';
  if (missing > 0) {
    if (run.status !== 'budget_exhausted' && run.status !== 'cancelled') {
      const err = new IncompleteRunError(runId, missing, tasks.length);
      await deps.store.setRunStatus(runId, 'failed', err.message);
      throw err;
    }
    status = run.status;
  }
  await deps.store.setRunStatus(runId, status);
  return { runId, status, reportPrefix };
}
