/**
 * Aggregate: score the run, write its reports to the blob store and set its final status.
 * The reports are the ones `rcb run` writes (strict leaderboard, official overall_stats.json)
 * plus JSON, CSV, markdown and the HTML page, so a cloud run reads like a local one.
 *
 * The environment checks the run's shards made (core/cloud/shard-environment.ts) become the
 * run's environment first, as a local run records its own: the tasks of a paper that cannot
 * run in the image are env_broken, out of the scores and named in every report, and a run
 * whose only unjudged tasks are env_broken has succeeded.
 */
import type { BlobStore, RunStore } from '../store';
import type { RunEnvironment, RunRecord } from '../records';
import { splitRunnable } from '../scoring';
import { LEADERBOARD, OFFICIAL_STATS, writeRunOutputs, type RunOutput } from '../run/run-outputs';
import { cloudKeys, type AggregateResult } from './payloads';
import type { EnvironmentChecks } from './ports';
import { RunInputError } from './pset-bundle';

/** The explorable page, `rcb cloud results RUN --format html --out FILE` (or `--url`). */
export const HTML_REPORT: RunOutput = { file: 'report.html', format: 'html', judge: 'strict', contentType: 'text/html; charset=utf-8' };

/** Report files written under `runs/<runId>/reports/`. */
export const CLOUD_REPORTS: RunOutput[] = [
  LEADERBOARD,
  { file: 'report.json', format: 'json', judge: 'strict', contentType: 'application/json' },
  { file: 'report.csv', format: 'csv', judge: 'strict', contentType: 'text/csv' },
  { file: 'report.md', format: 'markdown', judge: 'strict', contentType: 'text/markdown' },
  // The page of `rcb report --format html`, from the store alone (answers, verdicts, logs; no pset for diffs).
  HTML_REPORT,
  OFFICIAL_STATS,
];

/** Tasks without a verdict in a run that was neither stopped by its budget nor cancelled. */
export class IncompleteRunError extends Error {
  constructor(runId: string, missing: number, total: number) {
    super(`run ${runId}: ${missing} of ${total} task(s) have no verdict`);
    this.name = 'IncompleteRunError';
  }
}

/** The run's environment as its shards found it, papers in the run's order; null when no shard checked. */
export async function shardEnvironment(environments: EnvironmentChecks, run: RunRecord): Promise<RunEnvironment | null> {
  const found = await environments.listRunPaperEnvironments(run.runId);
  if (!found.length) return null;
  const order = new Map(run.papers.map((p, i) => [p.id, i]));
  found.sort((a, b) => (order.get(a.paper) ?? order.size) - (order.get(b.paper) ?? order.size) || a.paper.localeCompare(b.paper));
  return {
    python: [...new Set(found.map((p) => p.image))].join(', '),
    papers: found.map(({ paper, runs, reason }) => ({ paper, runs, reason })),
    checkedAt: found
      .map((p) => p.checkedAt)
      .sort()
      .at(-1)!,
  };
}

export async function aggregateRun(deps: { store: RunStore; blobs: BlobStore; environments?: EnvironmentChecks }, runId: string): Promise<AggregateResult> {
  const run = await deps.store.getRun(runId);
  if (!run) throw new RunInputError(`no run ${runId} in the run store`);
  await deps.store.setRunStatus(runId, 'aggregating');
  const environment = deps.environments ? await shardEnvironment(deps.environments, run) : null;
  if (environment) await deps.store.setRunEnvironment(runId, environment);
  const broken = new Set((environment?.papers ?? []).filter((p) => !p.runs).map((p) => p.paper));
  const reportPrefix = cloudKeys.reportPrefix(runId);
  await writeRunOutputs(deps.store, runId, (r, text) => deps.blobs.put(reportPrefix + r.file, text, r.contentType), CLOUD_REPORTS);
  // Tasks of papers that cannot run in the run's environment are never judged: not missing.
  const tasks = splitRunnable(run, await deps.store.listTasks(runId)).runnable;
  const verdicts = await deps.store.listVerdicts(runId);
  const judged = new Set(verdicts.map((v) => v.taskId));
  // env_broken tasks have no verdict by design.
  const missing = tasks.filter((t) => !judged.has(t.taskId) && !broken.has(t.paper)).length;
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
