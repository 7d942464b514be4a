/**
 * Published scores beside a run's (`rcb report --baseline`): which published model a run's
 * model is, and its cells in the table, markdown, CSV and JSON reports (the page draws its own).
 */
import type { ModelScore, ScoreReport } from '../scoring';

/** Published scores, scored under the official rule (all the original harness records). */
export interface Baseline {
  /** Where they come from (the file or run directory given), and over which papers. */
  label: string;
  report: ScoreReport;
}

/** The published model a run's model is: the same id, else the same ignoring case and a provider prefix. */
export function publishedModel(baseline: Baseline | undefined, model: string): ModelScore | null {
  if (!baseline) return null;
  const bare = (id: string) => id.toLowerCase().replace(/^.*\//, '');
  return baseline.report.models.find((m) => m.model === model) ?? baseline.report.models.find((m) => bare(m.model) === bare(model)) ?? null;
}

export const BASELINE_HEADER = 'published scaled pass@1 % [95% CI]';
export const BASELINE_CSV_COLUMNS = ['published_scaled_pass1_mean', 'published_scaled_pass1_ci_low', 'published_scaled_pass1_ci_high'];

const pct = (x: number) => x.toFixed(2);

/** `27.54 [19.74, 38.85]`, `n/a` for a published model without tasks here, `-` for a model not published. */
export function baselineCell(baseline: Baseline, model: string, paper?: string): string {
  const m = publishedModel(baseline, model);
  const s = paper ? m?.papers.find((p) => p.paper === paper) : m;
  if (!m) return '-';
  if (!s?.tasks) return 'n/a';
  return `${pct(s.scaled.mean)}${s.scaled.ci ? ` [${pct(s.scaled.ci.low)}, ${pct(s.scaled.ci.high)}]` : ''}`;
}

/** The CSV cells: mean, interval low and high; empty where nothing is published. */
export function baselineCsvCells(baseline: Baseline, model: string, paper: string): string[] {
  const m = publishedModel(baseline, model);
  const s = paper === 'ALL' ? m : m?.papers.find((p) => p.paper === paper);
  if (!s?.tasks) return ['', '', ''];
  return [pct(s.scaled.mean), s.scaled.ci ? pct(s.scaled.ci.low) : '', s.scaled.ci ? pct(s.scaled.ci.high) : ''];
}

/** The JSON of one model's published score, or null. */
export function baselineJson(
  baseline: Baseline,
  model: string,
): { model: string; tasks: number; scaled: { mean: number; ci: { low: number; high: number } | null } } | null {
  const m = publishedModel(baseline, model);
  return m
    ? { model: m.model, tasks: m.tasks, scaled: { mean: m.scaled.mean, ci: m.scaled.ci ? { low: m.scaled.ci.low, high: m.scaled.ci.high } : null } }
    : null;
}
