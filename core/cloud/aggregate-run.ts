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
import { cloudKeys, shardRefSchema, type AggregateResult, type InfraErrors, type InfraErrorShard } from './payloads';
import { shardTasks } from './shard-plan';
import { waveResultManifests } from './evaluation-waves';
import type { TaskRecord } from '../records';
import type { EnvironmentChecks } from './ports';
import { RunInputError } from './pset-bundle';
import { recordedCloudRun } from './recorded-run';
import { priceRecordedInfra } from '../cost/recorded-infra';
import { announceRunEnded, runEndedFromReport, type EventPublisher } from './run-events';

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

/** The parts of a Map Run's ResultWriter output Aggregate reads (Step Functions' manifest.json and its FAILED_n.json files). */
interface MapRunManifest {
  ResultFiles?: { FAILED?: Array<{ Key: string }> };
}
interface ChildResult {
  Input?: string;
  Error?: string;
  Cause?: string;
}

/**
 * The shards whose child execution failed, from the Map Run's results in the blob store
 * (ResultWriter: `<prefix>/<mapRunId>/manifest.json` lists the FAILED_n.json files, each an
 * array of child executions with their input and error). A child's input is the Map's item
 * selector output, `{ runId, paper, shard, ... }`.
 */
export async function failedShards(blobs: BlobStore, manifestKey: string): Promise<Array<Omit<InfraErrorShard, 'taskIds'>>> {
  const raw = await blobs.get(manifestKey);
  if (!raw) throw new RunInputError(`the evaluation Map's results manifest ${manifestKey} is not in the bucket`);
  const manifest = JSON.parse(raw.toString('utf8')) as MapRunManifest;
  const out: Array<Omit<InfraErrorShard, 'taskIds'>> = [];
  for (const file of manifest.ResultFiles?.FAILED ?? []) {
    const body = await blobs.get(file.Key);
    if (!body) throw new RunInputError(`${manifestKey} lists ${file.Key}, which is not in the bucket`);
    for (const child of JSON.parse(body.toString('utf8')) as ChildResult[]) {
      const input = JSON.parse(child.Input ?? '{}') as { shard?: unknown };
      const shard = shardRefSchema.safeParse(input.shard);
      if (!shard.success) throw new RunInputError(`${file.Key}: a failed child execution's input has no shard (${child.Input?.slice(0, 200)})`);
      out.push({ shard: shard.data, error: child.Error ?? 'States.Failed', ...(child.Cause ? { cause: child.Cause.slice(0, 2000) } : {}) });
    }
  }
  return out;
}

/** Each failed shard with its tasks still unjudged: the run's infra_error tasks. */
export function infraErrorsOf(runId: string, failed: Array<Omit<InfraErrorShard, 'taskIds'>>, tasks: TaskRecord[], judged: ReadonlySet<string>): InfraErrors {
  const shards = failed
    .map((f) => ({
      ...f,
      taskIds: shardTasks(tasks, f.shard)
        .filter((t) => !judged.has(t.taskId))
        .map((t) => t.taskId),
    }))
    .filter((f) => f.taskIds.length > 0);
  return { runId, shards, tasks: new Set(shards.flatMap((s) => s.taskIds)).size };
}

/** The run's infra_error record (`runs/<runId>/infra-errors.json`), if its latest aggregation wrote one. */
export async function readInfraErrors(blobs: BlobStore, runId: string): Promise<InfraErrors | null> {
  const raw = await blobs.get(cloudKeys.infraErrors(runId));
  return raw ? (JSON.parse(raw.toString('utf8')) as InfraErrors) : null;
}

/** The task ids of the run's infra_error record (none when its latest aggregation wrote none): what the reports leave out of the scores while unjudged. */
export async function readInfraErrorTasks(blobs: BlobStore, runId: string): Promise<ReadonlySet<string>> {
  return new Set((await readInfraErrors(blobs, runId))?.shards.flatMap((s) => s.taskIds) ?? []);
}

export interface AggregateOptions {
  /** Key of the evaluation Map Run's results manifest (the Map state's ResultWriterDetails.Key). @default none: no shard failed */
  mapResultsKey?: string;
  /** The execution whose evaluation waves recorded their Map Runs' results (core/cloud/evaluation-waves.ts): every wave's are read. */
  execution?: string;
}

/** The report whose figures the run-ended event carries (core/cloud/run-events.ts). */
const EVENT_REPORT = 'report.json';

export async function aggregateRun(
  deps: { store: RunStore; blobs: BlobStore; environments?: EnvironmentChecks; events?: EventPublisher },
  runId: string,
  options: AggregateOptions = {},
): Promise<AggregateResult> {
  const run = await deps.store.getRun(runId);
  if (!run) throw new RunInputError(`no run ${runId} in the run store`);
  await deps.store.setRunStatus(runId, 'aggregating');
  const environment = deps.environments ? await shardEnvironment(deps.environments, run) : null;
  if (environment) await deps.store.setRunEnvironment(runId, environment);
  const broken = new Set((environment?.papers ?? []).filter((p) => !p.runs).map((p) => p.paper));
  const reportPrefix = cloudKeys.reportPrefix(runId);
  // Tasks of papers that cannot run in the run's environment are never judged: not missing.
  const tasks = splitRunnable(run, await deps.store.listTasks(runId)).runnable;
  const verdicts = await deps.store.listVerdicts(runId);
  const judged = new Set(verdicts.map((v) => v.taskId));
  // A shard that failed every attempt fails only itself: its unjudged tasks are infra_error,
  // kept out of the score as env_broken tasks are, and the run ends succeeded_with_errors.
  // Written on every aggregation (empty when none), so a restart that judged them clears it.
  const manifests = [
    ...(options.mapResultsKey ? [options.mapResultsKey] : []),
    ...(options.execution ? await waveResultManifests(deps.blobs, runId, options.execution) : []),
  ];
  const failed: Array<Omit<InfraErrorShard, 'taskIds'>> = [];
  for (const key of manifests) failed.push(...(await failedShards(deps.blobs, key)));
  const infra = infraErrorsOf(runId, failed, tasks, judged);
  await deps.blobs.put(cloudKeys.infraErrors(runId), JSON.stringify(infra), 'application/json');
  // The reports after the infra_error record: their infrastructure cost bills the failed shards.
  const infraCost = priceRecordedInfra(await recordedCloudRun(deps, (await deps.store.getRun(runId)) ?? run));
  const infraTasks = new Set(infra.shards.flatMap((s) => s.taskIds));
  // env_broken tasks have no verdict by design.
  const missing = tasks.filter((t) => !judged.has(t.taskId) && !broken.has(t.paper) && !infraTasks.has(t.taskId)).length;
  // A run with tasks missing is partial: its reports say the status it ends with, not 'aggregating'.
  const endsAs = run.status === 'budget_exhausted' || run.status === 'cancelled' ? run.status : 'failed';
  // Every report scores without the infra_error tasks and names them, with their rate.
  const texts = await writeRunOutputs(deps.store, runId, (r, text) => deps.blobs.put(reportPrefix + r.file, text, r.contentType), CLOUD_REPORTS, {
    infra: infraCost,
    infraErrors: infraTasks,
    ...(missing > 0 ? { shownStatus: endsAs } : {}),
  });
  // The status before aggregation says why a run may be incomplete.
  let status: AggregateResult['status'] = infraTasks.size ? 'succeeded_with_errors' : 'succeeded';
  if (missing > 0) {
    if (run.status !== 'budget_exhausted' && run.status !== 'cancelled') {
      const err = new IncompleteRunError(runId, missing, tasks.length);
      await deps.store.setRunStatus(runId, 'failed', err.message);
      throw err;
    }
    status = run.status;
  }
  await deps.store.setRunStatus(
    runId,
    status,
    infraTasks.size
      ? `infra_error: ${infraTasks.size} of ${tasks.length} task(s) (${((100 * infraTasks.size) / Math.max(1, tasks.length)).toFixed(1)}% infra error rate), in ${infra.shards.length} shard(s) that failed every attempt; kept out of the judged tasks: start the run again to evaluate them`
      : undefined,
  );
  // The event names the final status and the report's own figures (its run status still reads aggregating).
  const event = runEndedFromReport(texts.get(EVENT_REPORT) ?? '', reportPrefix + EVENT_REPORT, status);
  const eventError = await announceRunEnded(deps.events, event);
  return { runId, status, reportPrefix, ...(infraTasks.size ? { infraErrorTasks: infraTasks.size } : {}), ...(eventError ? { eventError } : {}) };
}
