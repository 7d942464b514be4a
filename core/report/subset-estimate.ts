/**
 * The full-set estimate of a report (docs/subsets.md): each model's verdicts on a calibrated
 * subset's tasks give its estimated full-set scaled pass@1 with a 95% interval. For a run of
 * `rcb run --subset` (its spec keeps the subset file), or any run with `rcb report
 * --subset-file` (to check the estimate against the run's own full-set score). Always the
 * official judge: the subset was fitted on official verdicts, and it is what it predicts.
 * Every format labels the figures an estimate.
 */
import type { RunRecord, TaskRecord, Verdict } from '../records';
import { splitRunnable } from '../scoring';
import { taskKey } from '../subset/matrix';
import { assertSubsetFitsRun, estimateFromSubset, type SubsetFile } from '../subset/subset-file';

/** A model's estimate, as `models[].estimatedFull` of the JSON report. Percent of scaled pass@1. */
export interface EstimatedFull {
  /** Always true: the figures are an estimate, not a measurement. */
  estimate: true;
  /** Estimated full-set scaled pass@1 (official judge). */
  mean: number;
  /** Its 95% model-based predictive interval (not a bootstrap interval). */
  ci: { low: number; high: number };
  /** The subset's own scaled pass@1 under the official judge, over its tasks with a verdict. */
  subsetScore: number;
  /** Subset tasks the model has a verdict on; the others are estimated like tasks outside the subset. */
  observedTasks: number;
  missingTasks: number;
  /** The model is one the subset was fitted on: its estimate is in-sample, not a prediction. */
  inSample: boolean;
  /** Why no estimate is given (too few subset tasks judged); the figures are then not to be read. */
  refused?: string;
}

/**
 * The least share of a subset's tasks judged for an estimate: over random patterns of missing
 * tasks (and whole papers) dropping up to half of them, the 90% interval of the 32 published
 * models held out one at a time still covers their full-set score at least 90% of the time
 * (test/core/subset-missing.test.ts). Below it the estimate is refused.
 */
export const MIN_JUDGED_SHARE = 0.5;

/** Why an estimate on `observed` of `size` subset tasks is refused, or undefined. */
export function refusalOf(observed: number, size: number): string | undefined {
  if (observed >= MIN_JUDGED_SHARE * size) return undefined;
  return `refused: ${observed} of ${size} subset tasks judged, below the ${Math.round(100 * MIN_JUDGED_SHARE)}% its interval is checked for (env_broken, pending or infra_error tasks missing)`;
}

/** The subset an estimate comes from, and the estimates of every model. */
export interface SubsetEstimates {
  /** What every format prints beside the figures. */
  label: string;
  subset: { source: string; sha256: string | null; size: number; method: string; fittedOn: number };
  judge: 'official';
  models: Map<string, EstimatedFull>;
}

/** Where a report's subset comes from: a file given to `rcb report --subset-file`, or the run's own (RunSpec.subset). */
export interface EstimateSource {
  file: SubsetFile;
  source: string;
  sha256: string | null;
}

/** The subset a report of `run` estimates with: the one given, else the run's own, else none. */
export function estimateSourceOf(run: RunRecord, given: EstimateSource | undefined): EstimateSource | undefined {
  if (given) return given;
  const own = run.spec.subset;
  return own ? { file: own.file, source: own.source, sha256: own.sha256 } : undefined;
}

const pct = (x: number) => x.toFixed(2);

/** Each model's estimate from its official verdicts on the subset's tasks; refuses a subset that does not fit the run. */
export function estimateRun(run: RunRecord, tasks: TaskRecord[], verdicts: Map<string, Verdict>, from: EstimateSource): SubsetEstimates {
  const s = from.file;
  assertSubsetFitsRun(s, run, tasks, from.source);
  // Task samples of papers that cannot run here have no verdict that says anything of the model.
  const { runnable } = splitRunnable(run, tasks);
  const chosen = new Set(s.tasks.map((t) => taskKey(t.paper, t.snippet)));
  /** model -> task -> [passed, judged] samples */
  const counts = new Map<string, Map<string, [number, number]>>();
  for (const m of run.spec.models) counts.set(m.id, new Map());
  for (const t of runnable) {
    const key = taskKey(t.paper, t.snippet);
    if (!chosen.has(key)) continue;
    const v = verdicts.get(t.taskId);
    if (!v) continue;
    const byTask = counts.get(t.model) ?? counts.set(t.model, new Map()).get(t.model)!;
    const c = byTask.get(key) ?? [0, 0];
    byTask.set(key, [c[0] + (v.officialPass ? 1 : 0), c[1] + 1]);
  }
  const models = new Map<string, EstimatedFull>();
  for (const [model, byTask] of counts) {
    const e = estimateFromSubset(s, (paper, snippet) => {
      const c = byTask.get(taskKey(paper, snippet));
      return c ? c[0] / c[1] : undefined;
    });
    const refused = refusalOf(e.observed, s.tasks.length);
    // Every judged subset task passed (or failed): nothing bounds the score above (below) what the fitted models reached.
    const allPass = e.observed > 0 && e.subsetScore >= 100;
    const allFail = e.observed > 0 && e.subsetScore <= 0;
    models.set(model, {
      estimate: true,
      mean: e.mean,
      ci: { low: allFail ? 0 : e.low, high: allPass ? 100 : e.high },
      inSample: s.models.some((f) => f.id === model),
      ...(refused ? { refused } : {}),
      subsetScore: e.subsetScore,
      observedTasks: e.observed,
      missingTasks: e.missing.length,
    });
  }
  const sha = from.sha256 ? `, sha256 ${from.sha256.slice(0, 12)}` : '';
  return {
    label:
      `ESTIMATE, not a measurement: full-set scaled pass@1 under the official judge, estimated from each model's verdicts on the ` +
      `${s.size} tasks of the subset ${from.source} (${s.method.name}, fitted on ${s.models.length} models${sha}); ` +
      `[low, high] is its 95% model-based predictive interval (docs/subsets.md)`,
    subset: { source: from.source, sha256: from.sha256, size: s.size, method: s.method.name, fittedOn: s.models.length },
    judge: 'official',
    models,
  };
}

/** The estimate's rows, one per model: model, subset score, estimate, interval, subset tasks judged. */
export const ESTIMATE_HEADER = [
  'model',
  'subset scaled pass@1 % (official)',
  'ESTIMATED full-set scaled pass@1 %',
  '95% interval (estimate)',
  'subset tasks judged',
];

/** In `order` (the leaderboard's) where given, models it does not name last. */
export function estimateRows(e: SubsetEstimates, order: string[] = []): string[][] {
  const rank = (id: string) => (order.includes(id) ? order.indexOf(id) : order.length);
  return [...e.models]
    .sort(([a], [b]) => rank(a) - rank(b))
    .map(([model, m]) => [
      m.inSample ? `${model} (in-sample)` : model,
      m.observedTasks ? pct(m.subsetScore) : 'n/a',
      m.refused ? m.refused : `~${pct(m.mean)}`,
      m.refused ? 'n/a' : `[${pct(m.ci.low)}, ${pct(m.ci.high)}]`,
      `${m.observedTasks}/${m.observedTasks + m.missingTasks}`,
    ]);
}

/** The CSV columns an estimate adds (last, on each model's ALL row). */
export const ESTIMATE_CSV_COLUMNS = [
  'estimated_full_scaled_pass1_mean',
  'estimated_full_scaled_pass1_ci_low',
  'estimated_full_scaled_pass1_ci_high',
  'subset_scaled_pass1_official',
  'subset_tasks_judged',
  'estimate_note',
];

export function estimateCsvCells(e: SubsetEstimates, model: string): string[] {
  const m = e.models.get(model);
  if (!m) return ESTIMATE_CSV_COLUMNS.map(() => '');
  const note = [m.refused, m.inSample ? 'in-sample: the subset was fitted on this model' : undefined, e.label].filter(Boolean).join('; ');
  if (m.refused) return ['', '', '', m.observedTasks ? pct(m.subsetScore) : '', String(m.observedTasks), note];
  return [pct(m.mean), pct(m.ci.low), pct(m.ci.high), m.observedTasks ? pct(m.subsetScore) : '', String(m.observedTasks), note];
}

/** The JSON report's top-level `estimatedFull` (the models' figures are in `models[].estimatedFull`). */
export function estimateJson(e: SubsetEstimates): { estimate: true; label: string; judge: 'official'; subset: SubsetEstimates['subset'] } {
  return { estimate: true, label: e.label, judge: e.judge, subset: e.subset };
}
