/**
 * The files every finished run leaves beside its store, wherever it ran: the strict
 * leaderboard (what `rcb run` prints) and the official overall_stats.json. A local run writes
 * them to its directory, an emulated run to --out, Aggregate to the bucket (with more
 * formats); they are rendered here once.
 */
import type { ShownStatus } from '../report/partial-run';
import type { RunStore } from '../store';
import type { Judge } from '../types';
import { buildReport, newReportCache } from '../report/build-report';
import type { ReportFormat } from '../report/format';
import type { InfraCost } from '../cost/recorded-infra';

export interface RunOutput {
  file: string;
  format: ReportFormat;
  judge: Judge;
  contentType: string;
}

export const LEADERBOARD: RunOutput = { file: 'leaderboard.txt', format: 'table', judge: 'strict', contentType: 'text/plain; charset=utf-8' };
export const OFFICIAL_STATS: RunOutput = { file: 'overall_stats.json', format: 'official', judge: 'official', contentType: 'application/json' };

/** What every finished run writes. */
export const RUN_OUTPUTS: readonly RunOutput[] = [LEADERBOARD, OFFICIAL_STATS];

/** Renders `outputs` of the run and hands each to `write`; returns the texts by file name. */
export async function writeRunOutputs(
  store: RunStore,
  runId: string,
  write: (output: RunOutput, text: string) => Promise<void> | void,
  outputs: readonly RunOutput[] = RUN_OUTPUTS,
  extra: {
    /** The run's infrastructure cost, for the reports' cost lines. @default a local run's ($0) */
    infra?: InfraCost;
    /** Task ids a cloud run recorded infra_error (out of the scores while unjudged). */
    infraErrors?: ReadonlySet<string>;
    /** The status a partial run's reports name (core/report/partial-run.ts), when not the stored one. */
    shownStatus?: ShownStatus;
  } = {},
): Promise<Map<string, string>> {
  const texts = new Map<string, string>();
  const { infra, infraErrors, shownStatus } = extra;
  // One read of the run and one score per judge for every format (each score of a large run takes seconds).
  const cache = newReportCache();
  for (const output of outputs) {
    const { text } = await buildReport(store, runId, {
      format: output.format,
      judge: output.judge,
      subset: 'all',
      infra,
      cache,
      ...(infraErrors?.size ? { infraErrors } : {}),
      ...(shownStatus ? { shownStatus } : {}),
    });
    await write(output, text);
    texts.set(output.file, text);
  }
  return texts;
}
