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
import { priceRecordedInfra } from '../cost/recorded-infra';

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

/** The report, or null when the run does not exist. Errors of the report itself (a judge a run lacks) are thrown. */
export async function readRunResults(
  deps: RunResultsDeps,
  runId: string,
  opts: { format: ReportFormat; judge?: Judge; subset: Subset },
): Promise<RunResults | null> {
  const key = storedReportKey(runId, opts);
  if (key) {
    const body = await deps.blobs.get(key);
    if (body) return { text: body.toString('utf8') };
  }
  const run = await deps.store.getRun(runId);
  if (!run) return null;
  // Official results have no cost lines: nothing to read for them.
  const infra = opts.format === 'official' ? undefined : priceRecordedInfra(await recordedCloudRun(deps, run));
  // The infra_error tasks Aggregate recorded stay out of this report's scores as out of the stored ones.
  const infraErrors = await readInfraErrorTasks(deps.blobs, runId);
  const { text } = await buildReport(deps.store, runId, { ...opts, infra, ...(infraErrors.size ? { infraErrors } : {}) });
  return { text, ...(run.status !== 'succeeded' ? { note: `run ${runId} is ${run.status}; these are the results so far` } : {}) };
}
