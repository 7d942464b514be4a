/**
 * The paper's figures, for print: the leaderboard with its intervals, the model x paper
 * heatmap, all papers against the contamination-safe ones, with against without the paper
 * (two runs), pass rate against snippet length, and failure classes. Each is one standalone
 * SVG drawn by the page's own chart code at print sizes: a one-column figure is 3.5 in wide,
 * a two-column one (heatmap, snippet length) at most 7 in, and their text is 8 pt (the small
 * panels' ticks 6.7 pt). Fills differ in lightness, not only in hue, so the figures read in
 * greyscale. docs/running-locally.md#figures-for-a-paper says how to make them.
 */
import type { Judge } from '../../types';
import type { ModelInfo, RunRecord } from '../../records';
import type { ModelScore, ScoreReport, Subset } from '../../scoring';
import { scoreStoredRun } from '../../scoring';
import type { LoadedRun } from '../loaded-run';
import { displayName } from '../display-name';
import { LOC_BINS, lengthBins } from '../length-bins';
import { categoryLineChart, escapeXml, heatmap, intervalBarChart, pairedBarChart, stackedBarChart, type ChartLayout, type PairValue } from '../svg-charts';

export interface FigureRun {
  /** How the reader knows the run (its directory). */
  label: string;
  loaded: LoadedRun;
}

export interface Figure {
  /** File name without extension. */
  name: string;
  title: string;
  /** A standalone SVG document. */
  svg: string;
  /** Its printed width and height, in points. */
  widthPt: number;
  heightPt: number;
}

/** Points per chart unit: the charts' 12-unit text prints at 8 pt. */
export const PT_PER_UNIT = 2 / 3;
const COLUMN: ChartLayout = { plot: 150, maxLabel: 180 };

/** A chart of svg-charts.ts as a file of its own: sized in points, on white, with a title. */
export function standalone(chart: string, title: string): { svg: string; widthPt: number; heightPt: number } {
  const m = /^<svg id="[^"]*" class="chart" viewBox="0 0 ([\d.]+) ([\d.]+)" width="100%" style="max-width:[\d.]+px"/.exec(chart);
  if (!m) throw new Error('not a chart of svg-charts.ts');
  const [w, h] = [Number(m[1]), Number(m[2])];
  const widthPt = Math.round(w * PT_PER_UNIT * 10) / 10;
  const heightPt = Math.round(h * PT_PER_UNIT * 10) / 10;
  const open = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${w} ${h}" width="${widthPt}pt" height="${heightPt}pt"`;
  const body = chart.slice(m[0].length).replace(/^([^>]*>)/, `$1<title>${escapeXml(title)}</title><rect width="${w}" height="${h}" fill="#fff"/>`);
  return { svg: `<?xml version="1.0" encoding="UTF-8"?>\n${open}${body}\n`, widthPt, heightPt };
}

/** The cutoff a model's published configuration gives, where the run recorded none itself. */
function withCutoffs(run: RunRecord): RunRecord {
  const models: Record<string, ModelInfo> = {};
  for (const [id, info] of Object.entries(run.models)) {
    const cfg = info.config.knowledge_cutoff_date;
    models[id] = info.knowledgeCutoff || typeof cfg !== 'string' || !/^\d{4}-\d{2}$/.test(cfg) ? info : { ...info, knowledgeCutoff: cfg };
  }
  return { ...run, models };
}

interface Scored {
  run: FigureRun;
  judge: Judge;
  score: (subset: Subset) => ScoreReport;
  name: (model: string) => string;
}

function scored(r: FigureRun, judge: Judge): Scored {
  const run = withCutoffs(r.loaded.run);
  const memo = new Map<Subset, ScoreReport>();
  return {
    run: r,
    judge,
    score: (subset) =>
      memo.get(subset) ?? memo.set(subset, scoreStoredRun(run, r.loaded.tasks, r.loaded.verdicts, judge, subset, r.loaded.infraErrors)).get(subset)!,
    name: (model) => displayName(model, run.models[model]),
  };
}

const pct = (x: number) => x.toFixed(1);
const interval = (m: ModelScore) => (m.scaled.ci ? ` [${pct(m.scaled.ci.low)}, ${pct(m.scaled.ci.high)}]` : '');
const value = (m: ModelScore | undefined, what: string): PairValue | null =>
  m?.tasks
    ? {
        value: m.scaled.mean,
        low: m.scaled.ci?.low ?? null,
        high: m.scaled.ci?.high ?? null,
        title: `${what}: ${pct(m.scaled.mean)}%${interval(m)}, ${m.tasks} task(s)`,
      }
    : null;

function leaderboardFigure(s: Scored): string {
  const models = s.score('all').models;
  return intervalBarChart(
    'leaderboard',
    'scaled pass@1 per model with 95% intervals',
    models.map((m) => ({
      label: m.model,
      display: s.name(m.model),
      value: m.tasks ? m.scaled.mean : null,
      low: m.scaled.ci?.low ?? null,
      high: m.scaled.ci?.high ?? null,
      color: '#2171b5',
      title: `${s.name(m.model)}: ${pct(m.scaled.mean)}%${interval(m)}`,
    })),
    COLUMN,
  );
}

function heatmapFigure(s: Scored): string {
  const models = s.score('all').models;
  const papers = [...new Set(models.flatMap((m) => m.papers.map((p) => p.paper)))].sort((a, b) => a.localeCompare(b, 'en', { sensitivity: 'base' }));
  return heatmap(
    'paper-heatmap',
    'scaled pass@1 per model and paper',
    models.map((m) => m.model),
    papers,
    (i, j) => {
      const p = models[i].papers.find((q) => q.paper === papers[j]);
      return p
        ? { value: p.scaled.mean, title: `${s.name(models[i].model)} / ${papers[j]}: ${pct(p.scaled.mean)}%` }
        : { value: null, title: 'not in the run' };
    },
    models.map((m) => s.name(m.model)),
    { colW: 26, maxLabel: 190 },
  );
}

function safeFigure(s: Scored): string {
  const safe = s.score('safe-per-model');
  return pairedBarChart(
    'safe-vs-all',
    'scaled pass@1 on all papers and on the papers after each model’s cutoff',
    s.score('all').models.map((m) => ({
      label: m.model,
      display: s.name(m.model),
      values: [
        value(m, 'all papers'),
        value(
          safe.models.find((x) => x.model === m.model),
          'after its cutoff',
        ),
      ],
    })),
    ['all papers', 'after its cutoff'],
    COLUMN,
  );
}

function paperFigure(withPaper: Scored, without: Scored): string {
  const other = without.score('all').models;
  return pairedBarChart(
    'with-vs-without-paper',
    'scaled pass@1 with and without the paper in the prompt',
    withPaper
      .score('all')
      .models.filter((m) => other.some((o) => o.model === m.model))
      .map((m) => ({
        label: m.model,
        display: withPaper.name(m.model),
        values: [
          value(m, 'with the paper'),
          value(
            other.find((o) => o.model === m.model),
            'without the paper',
          ),
        ],
      })),
    ['with the paper', 'without the paper'],
    COLUMN,
  );
}

function lengthFigure(s: Scored): string {
  const models = s.score('all').models;
  const used = new Set<number>();
  const stats = models.map((m) => lengthBins(s.run.loaded, m.model, m.paperIds, s.judge, used));
  const cols = LOC_BINS.map((_, i) => i).filter((i) => used.has(i));
  const greys = ['#08306b', '#2171b5', '#6baed6', '#08306b', '#2171b5', '#6baed6', '#000000', '#737373'];
  return categoryLineChart(
    'pass-vs-length',
    'pass rate against snippet length',
    cols.map((i) => LOC_BINS[i][2]),
    models.map((m, k) => ({
      label: m.model,
      display: s.name(m.model),
      color: greys[k % greys.length],
      points: cols.map((i) =>
        stats[k][i].total ? { value: (100 * stats[k][i].passed) / stats[k][i].total, title: `${s.name(m.model)}, ${LOC_BINS[i][2]} LoC` } : null,
      ),
    })),
    { perRow: 4, panel: 180 },
  );
}

/** The classes drawn: the five most frequent, the rest as `other`; a ramp from dark to light. */
const CLASS_FILLS = ['#08306b', '#2879b9', '#73b3d8', '#c8ddf0', '#f0f0f0', '#ffffff'];

function failureFigure(s: Scored): string {
  const models = s.score('all').models;
  const totals = new Map<string, number>();
  for (const m of models) for (const [c, n] of Object.entries(m.failures)) totals.set(c, (totals.get(c) ?? 0) + (n ?? 0));
  const ranked = [...totals].filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]);
  const shown = ranked.slice(0, ranked.length > 6 ? 5 : 6).map(([c]) => c);
  const keys = ranked.length > shown.length ? [...shown, 'other'] : shown;
  return stackedBarChart(
    'failure-classes',
    'failed task samples by class',
    models.map((m) => ({
      label: m.model,
      display: s.name(m.model),
      parts: keys.map((k, i) => ({
        key: k,
        value:
          k === 'other'
            ? Object.entries(m.failures).reduce((a, [c, n]) => a + (shown.includes(c) ? 0 : (n ?? 0)), 0)
            : (m.failures[k as keyof typeof m.failures] ?? 0),
        color: CLASS_FILLS[i],
        pattern: true,
      })),
    })),
    { ...COLUMN, key: keys.map((k, i) => ({ label: k, color: CLASS_FILLS[i] })) },
  );
}

/**
 * Every figure the runs allow: the first run's five, and with against without the paper when
 * two runs are given, one of each. Judge: the official rule when a run was imported (all it records).
 */
export function figureSet(runs: FigureRun[], judge?: Judge): Figure[] {
  if (!runs.length || runs.length > 2) throw new Error(`figures take one run directory, or two (with and without the paper); got ${runs.length}`);
  const j: Judge = judge ?? (runs.some((r) => r.loaded.run.source === 'import') ? 'official' : 'strict');
  const all = runs.map((r) => scored(r, j));
  const first = all[0];
  const out: [string, string, string][] = [
    ['leaderboard', 'Scaled pass@1 per model, 95% intervals', leaderboardFigure(first)],
    ['paper-heatmap', 'Scaled pass@1 per model and paper (%)', heatmapFigure(first)],
    ['safe-vs-all', 'All papers against the papers after each model’s knowledge cutoff', safeFigure(first)],
    ['pass-vs-length', 'Pass rate against snippet length (lines of code)', lengthFigure(first)],
    ['failure-classes', 'Failed task samples by class', failureFigure(first)],
  ];
  if (all.length === 2) {
    const withPaper = all.find((s) => s.run.loaded.run.spec.withPaper);
    const without = all.find((s) => !s.run.loaded.run.spec.withPaper);
    if (!withPaper || !without)
      throw new Error(
        `two runs make the with-against-without-the-paper figure: one with the paper, one run with --no-paper (${runs.map((r) => r.label).join(' and ')} are both ${first.run.loaded.run.spec.withPaper ? 'with' : 'without'} it)`,
      );
    out.push(['with-vs-without-paper', 'Scaled pass@1 with and without the paper in the prompt', paperFigure(withPaper, without)]);
  }
  return out.map(([name, title, chart]) => ({ name, title, ...standalone(chart, title) }));
}
