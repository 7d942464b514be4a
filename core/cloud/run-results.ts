/**
 * `rcb cloud results RUN`: the report Aggregate stored when it fits the flags (each format
 * with its default judge over every paper), else one built from the table.
 */
import type { BlobStore, RunStore } from '../store';
import type { Judge } from '../types';
import type { Subset } from '../scoring';
import type { ReportFormat } from '../report/format';
import { buildReport } from '../report/build-report';
import { CLOUD_REPORTS, readInfraErrorTasks } from './aggregate-run';
import { cloudKeys } from './payloads';
import { recordedCloudRun } from './recorded-run';
import { priceRecordedInfra, type InfraCost } from '../cost/recorded-infra';
import type { RunRecord } from '../records';

export interface RunResultsDeps {
  store: RunStore;
  blobs: BlobStore;
}

export interface RunResults {
  text: string;
  /** Said when the run has not succeeded: the results are those so far. */
  note?: string;
}

/** The bucket key of the report Aggregate stored for these flags, or null when none fits them. */
export function storedReportKey(runId: string, opts: { format: ReportFormat; judge?: Judge; subset: Subset }): string | null {
  const stored = CLOUD_REPORTS.find((r) => r.format === opts.format);
  if (!stored || opts.subset !== 'all' || (opts.judge !== undefined && opts.judge !== stored.judge)) return null;
  return cloudKeys.reportPrefix(runId) + stored.file;
}

/**
 * What a report of a cloud run needs beyond the table, as Aggregate gave its stored reports:
 * the infra_error tasks it recorded (out of the scores while unjudged, named) and the run's
 * infrastructure cost priced from its records (unless `priced` is false).
 */
export async function cloudReportExtras(
  deps: RunResultsDeps,
  run: RunRecord,
  opts: { priced?: boolean } = {},
): Promise<{ infra?: InfraCost; infraErrors?: ReadonlySet<string> }> {
  const infraErrors = await readInfraErrorTasks(deps.blobs, run.runId);
  return {
    ...(opts.priced === false ? {} : { infra: priceRecordedInfra(await recordedCloudRun(deps, run)) }),
    ...(infraErrors.size ? { infraErrors } : {}),
  };
}

/** The report, or null when the run does not exist. Errors of the report itself (a judge a run lacks) are thrown. */
/**
 * A stored JSON report with the run's status of now: Aggregate writes the reports while the run
 * is still `aggregating` and sets its final status after, so the stored file would contradict
 * `rcb cloud status`.
 */
async function withCurrentStatus(deps: RunResultsDeps, runId: string, text: string): Promise<string> {
  const run = await deps.store.getRun(runId);
  const report = JSON.parse(text) as { run?: { status?: string } };
  if (!run || !report.run || report.run.status === run.status) return text;
  report.run.status = run.status;
  return `${JSON.stringify(report, null, 2)}\n`;
}

export async function readRunResults(
  deps: RunResultsDeps,
  runId: string,
  opts: { format: ReportFormat; judge?: Judge; subset: Subset },
): Promise<RunResults | null> {
  const key = storedReportKey(runId, opts);
  if (key) {
    const body = await deps.blobs.get(key);
    if (body) return { text: opts.format === 'json' ? await withCurrentStatus(deps, runId, body.toString('utf8')) : body.toString('utf8') };
  }
  const run = await deps.store.getRun(runId);
  if (!run) return null;
  // Official results have no cost lines: nothing to price for them.
  const extras = await cloudReportExtras(deps, run, { priced: opts.format !== 'official' });
  const { text } = await buildReport(deps.store, runId, { ...opts, ...extras });
  return { text, ...(run.status !== 'succeeded' ? { note: `run ${runId} is ${run.status}; these are the results so far` } : {}) };
}
