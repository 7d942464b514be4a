/**
 * The report use case: read a run from its store and score it with the chosen judge and
 * subset, in any format.
 */
import type { Judge } from '../types';
import type { RunStore } from '../store';
import type { RunRecord, TaskRecord, Verdict } from '../records';
import type { ScoreReport, Subset } from '../scoring';
import { scoreStoredRun } from '../scoring';
import type { ReportFormat } from './format';
import { formatCsv, formatJson, formatMarkdown, formatTable } from './format';
import { toOverallStats } from './official';
import type { TaskSources } from './task-detail';
import { loadRun } from './loaded-run';
import { buildHtmlReport } from './html-report';
import type { ShownStatus } from './partial-run';
import { estimateRun, estimateSourceOf, type EstimateSource } from './subset-estimate';
import { runCost } from './run-cost';
import type { Baseline } from './baseline';
import { priceRecordedInfra, type InfraCost } from '../cost/recorded-infra';

export interface ReportOptions {
  format: ReportFormat;
  /** Defaults to `defaultJudge` of the run and format. */
  judge?: Judge;
  subset: Subset;
  /** For html: where the drill-down's diffs and prompts come from (none: answers and logs only). */
  sources?: TaskSources;
  /** For html: how the page names the run (its directory); default the run id. */
  label?: string;
  /** Estimate the full-set score from this subset (`--subset-file`); default the run's own subset, if any. */
  estimate?: EstimateSource;
  /**
   * The run's infrastructure cost (core/cost/recorded-infra.ts), printed beside its model
   * spend with dollars per solved line. @default a local run's: $0, said to be local
   */
  infra?: InfraCost;
  /** Task ids a cloud run recorded infra_error: those still unjudged are out of the scores, counted apart. */
  infraErrors?: ReadonlySet<string>;
  /** The status to show when the caller knows more than the store (`interrupted`: core/report/partial-run.ts). */
  shownStatus?: ShownStatus;
  /**
   * Shared by the reports of one run written together (core/run/run-outputs.ts): its tasks and
   * verdicts read once and each judge's score computed once, not once per format (at 32 models
   * x 212 tasks x 5 samples each score's bootstrap takes seconds). Only for reports of the same
   * store state, subset and infraErrors.
   */
  cache?: ReportCache;
  /** Published scores beside the run's (`--baseline`, core/report/baseline.ts); not in the official format. */
  baseline?: Baseline;
}

export interface ReportCache {
  read?: Promise<{ tasks: TaskRecord[]; verdicts: Map<string, Verdict> }>;
  scores: Map<string, ScoreReport>;
}

export const newReportCache = (): ReportCache => ({ scores: new Map() });

async function readScored(store: RunStore, runId: string): Promise<{ tasks: TaskRecord[]; verdicts: Map<string, Verdict> }> {
  const tasks = await store.listTasks(runId);
  return { tasks, verdicts: new Map((await store.listVerdicts(runId)).map((v) => [v.taskId, v])) };
}

/** The cost lines of every format but official: none for imported results (they record no spend). */
function costOf(run: RunRecord, infra: InfraCost | undefined) {
  if (run.source === 'import') return undefined;
  return infra ?? priceRecordedInfra({ where: 'local' });
}

/**
 * The strict judge, except where only the original rule makes sense: imported results
 * (they record no more) and the original harness's own format.
 */
export function defaultJudge(run: RunRecord, format: ReportFormat): Judge {
  return run.source === 'import' || format === 'official' ? 'official' : 'strict';
}

export async function buildReport(store: RunStore, runId: string, opts: ReportOptions): Promise<{ run: RunRecord; text: string }> {
  const run = await store.getRun(runId);
  if (!run) throw new Error(`no run ${runId} in this store`);
  const judge = opts.judge ?? defaultJudge(run, opts.format);
  if (run.source === 'import' && judge === 'strict') {
    throw new Error('this run was imported from overall_stats.json, which records only the original pass rule: use --judge official');
  }
  const from = estimateSourceOf(run, opts.estimate);
  if (opts.format === 'html') {
    const loaded = { ...(await loadRun(store, runId)), ...(opts.infraErrors ? { infraErrors: opts.infraErrors } : {}) };
    const sources = opts.sources ?? { pset: null, psetNote: 'the pset is not at hand here', template: null };
    const estimate = from ? estimateRun(run, loaded.tasks, loaded.verdicts, from) : undefined;
    const scored = opts.cache?.scores.get(`${judge}\0${opts.subset}`);
    return {
      run,
      text: buildHtmlReport(
        [
          {
            label: opts.label ?? runId,
            loaded,
            sources,
            estimate,
            infra: costOf(run, opts.infra),
            ...(scored ? { scored } : {}),
            ...(opts.shownStatus ? { shownStatus: opts.shownStatus } : {}),
          },
        ],
        {
          judge,
          subset: opts.subset,
          baseline: opts.baseline,
        },
      ),
    };
  }
  const { cache } = opts;
  const { tasks, verdicts } = await (cache ? (cache.read ??= readScored(store, runId)) : readScored(store, runId));
  const scoreKey = `${judge}\0${opts.subset}`;
  const report = cache?.scores.get(scoreKey) ?? scoreStoredRun(run, tasks, verdicts, judge, opts.subset, opts.infraErrors, opts.shownStatus);
  cache?.scores.set(scoreKey, report);
  const estimates = from ? estimateRun(run, tasks, verdicts, from) : undefined;
  const infra = opts.format === 'official' ? undefined : costOf(run, opts.infra);
  const cost = infra ? runCost(report, tasks, await store.getCompletions(tasks.map((t) => t.taskId)), infra) : undefined;
  switch (opts.format) {
    case 'table':
      return { run, text: formatTable(report, run, estimates, cost, opts.baseline) };
    case 'markdown':
      return { run, text: formatMarkdown(report, run, estimates, cost, opts.baseline) };
    case 'csv':
      return { run, text: formatCsv(report, estimates, cost, opts.baseline) };
    case 'json':
      return { run, text: formatJson(report, run, estimates, cost, opts.baseline) };
    case 'official':
      // The original format has no place for notes: rcb adds `rcb_notes` only when there are some
      // (untested or env_broken tasks), so a complete run's file stays in the original's shape.
      return {
        run,
        text: `${JSON.stringify({ ...toOverallStats(run, tasks, verdicts, report), ...(report.notes.length ? { rcb_notes: report.notes } : {}) }, null, 2)}\n`,
      };
  }
}
