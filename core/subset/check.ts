/**
 * Leave-one-model-out check of the subset method: each model in turn is held out of the task
 * choice, the fit and the calibration; its full-set scaled pass@1 is estimated from its
 * verdicts on the chosen tasks and compared with its true score on the full set. The same
 * for random subsets of the same size, scored by their own scaled pass@1 (the naive reading).
 */
import { seededRandom } from '../report/bootstrap';
import { estimateWithInterval, FitCache, fitSubset, locOf, METHOD_DEFAULTS, observedOn, shuffled, type MethodOptions } from './method';
import { scaledScore, type VerdictMatrix } from './matrix';

export interface HeldOutResult {
  model: string;
  truth: number;
  estimate: number;
  low: number;
  high: number;
}

export interface ErrorSummary {
  /** Mean absolute error, points of scaled pass@1. */
  mae: number;
  max: number;
  /** 90th percentile of the absolute error. */
  p90: number;
  /** Share of held-out models whose true score lies inside the interval. */
  coverage: number;
  /** Mean width of the interval, points. */
  width: number;
}

export interface SizeCheck {
  size: number;
  method: ErrorSummary & { heldOut: HeldOutResult[] };
  /** Random subsets read by their own scaled pass@1: each figure the mean over the seeds. */
  random: ErrorSummary & { seeds: number };
  /** The models of highest true score, held out, best first. */
  top: HeldOutResult[];
}

export interface CheckOptions {
  sizes: number[];
  seed: number;
  /** How many random subsets (seeds) per held-out model. */
  randomSeeds: number;
  top: number;
  method: MethodOptions;
  /** Called after each held-out model (progress on long checks). */
  onProgress?: (done: number, total: number) => void;
}

export const CHECK_DEFAULTS: Omit<CheckOptions, 'sizes'> = { seed: 0, randomSeeds: 10, top: 5, method: METHOD_DEFAULTS };

export function summarise(results: HeldOutResult[]): ErrorSummary {
  const errs = results.map((r) => Math.abs(r.estimate - r.truth)).sort((a, b) => a - b);
  const n = results.length;
  return {
    mae: errs.reduce((s, e) => s + e, 0) / n,
    max: errs[n - 1],
    p90: errs[Math.min(n - 1, Math.ceil(0.9 * n) - 1)],
    coverage: results.filter((r) => r.low <= r.truth && r.truth <= r.high).length / n,
    width: results.reduce((s, r) => s + (r.high - r.low), 0) / n,
  };
}

/**
 * The naive reading of a random subset: its own scaled pass@1 (a ratio estimator), with the
 * normal interval of a ratio estimate from a simple random sample of tasks without replacement.
 */
export function subsetScore(
  loc: ArrayLike<number>,
  observed: { tasks: number[]; values: number[] },
  z: number,
): { estimate: number; low: number; high: number } {
  const n = observed.tasks.length;
  let pl = 0;
  let l = 0;
  for (let k = 0; k < n; k++) {
    pl += observed.values[k] * loc[observed.tasks[k]];
    l += loc[observed.tasks[k]];
  }
  const r = l ? pl / l : 0;
  let ss = 0;
  for (let k = 0; k < n; k++) ss += (loc[observed.tasks[k]] * (observed.values[k] - r)) ** 2;
  const T = loc.length;
  const meanLoc = l / n;
  const variance = n > 1 && meanLoc ? (((1 - n / T) / n) * (ss / (n - 1))) / meanLoc ** 2 : 0;
  const half = z * Math.sqrt(variance);
  return { estimate: 100 * r, low: 100 * Math.max(0, r - half), high: 100 * Math.min(1, r + half) };
}

function mean(xs: number[]): number {
  return xs.reduce((s, x) => s + x, 0) / xs.length;
}

export function checkSubsets(m: VerdictMatrix, options: Partial<Omit<CheckOptions, 'sizes'>> & { sizes: number[] }): SizeCheck[] {
  const opts: CheckOptions = { ...CHECK_DEFAULTS, ...options };
  const M = m.models.length;
  const T = m.tasks.length;
  if (M < 3) throw new Error(`leave-one-model-out needs at least 3 models (got ${M})`);
  for (const s of opts.sizes) if (s < 1 || s > T) throw new Error(`--size ${s}: must be between 1 and the ${T} tasks of the verdicts`);
  const loc = locOf(m);
  const truth = Array.from({ length: M }, (_, i) => scaledScore(m, i));
  const cache = new FitCache(opts.method.fit);
  const all = Array.from({ length: M }, (_, i) => i);
  const total = M * opts.sizes.length;
  let done = 0;
  return opts.sizes.map((size) => {
    const heldOut: HeldOutResult[] = [];
    for (const h of all) {
      const rows = all.filter((r) => r !== h);
      const fitted = fitSubset(m, rows, size, opts.seed, opts.method, cache);
      const e = estimateWithInterval(fitted.params, loc, observedOn(m, h, fitted.tasks), fitted.inflation, opts.method);
      heldOut.push({ model: m.models[h], truth: truth[h], estimate: e.mean, low: e.low, high: e.high });
      opts.onProgress?.(++done, total);
    }
    const randomRuns: ReturnType<typeof summarise>[] = [];
    for (let s = 0; s < opts.randomSeeds; s++) {
      const random = seededRandom((opts.seed * 7919 + s * 104729 + size) >>> 0);
      const results = all.map((h) => {
        const tasks = shuffled(T, Math.floor(random() * 2 ** 32))
          .slice(0, size)
          .sort((x, y) => x - y);
        const naive = subsetScore(loc, observedOn(m, h, tasks), opts.method.z);
        return { model: m.models[h], truth: truth[h], ...naive };
      });
      randomRuns.push(summarise(results));
    }
    const random = {
      mae: mean(randomRuns.map((r) => r.mae)),
      max: mean(randomRuns.map((r) => r.max)),
      p90: mean(randomRuns.map((r) => r.p90)),
      coverage: mean(randomRuns.map((r) => r.coverage)),
      width: mean(randomRuns.map((r) => r.width)),
      seeds: opts.randomSeeds,
    };
    const top = [...heldOut].sort((x, y) => y.truth - x.truth).slice(0, opts.top);
    return { size, method: { ...summarise(heldOut), heldOut }, random, top };
  });
}

const f2 = (x: number) => x.toFixed(2);

/** The check as a table: one block per size, the method, random subsets, and the top models held out. */
export function formatCheck(results: SizeCheck[], about: { sources: string; models: number; tasks: number; loc: number }): string {
  const lines = [
    `leave-one-model-out over ${about.models} models, ${about.tasks} tasks (${about.loc} LoC) of ${about.sources}`,
    'error in points of scaled pass@1 (the held-out model left out of task choice, fit and calibration); coverage of the 95% interval',
    '',
    `${'size'.padStart(4)}  ${'estimator'.padEnd(38)} ${'MAE'.padStart(6)} ${'p90'.padStart(6)} ${'max'.padStart(6)} ${'cover'.padStart(6)} ${'width'.padStart(6)}`,
  ];
  const row = (size: number, label: string, s: ErrorSummary) =>
    `${String(size).padStart(4)}  ${label.padEnd(38)} ${f2(s.mae).padStart(6)} ${f2(s.p90).padStart(6)} ${f2(s.max).padStart(6)} ${f2(s.coverage).padStart(6)} ${s.width.toFixed(1).padStart(6)}`;
  for (const r of results) {
    lines.push(row(r.size, 'IRT 2PL, LoC²×variance (estimate)', r.method));
    lines.push(row(r.size, `random subsets (own score, ${r.random.seeds} seeds)`, r.random));
    lines.push(`${''.padStart(4)}  ratio to random: ${f2(r.random.mae / r.method.mae)}× lower MAE`);
  }
  for (const r of results) {
    lines.push('', `top ${r.top.length} models held out, size ${r.size} (true → estimate [95% interval], error):`);
    for (const t of r.top) {
      lines.push(
        `  ${t.model.padEnd(34)} ${f2(t.truth).padStart(6)} → ${f2(t.estimate).padStart(6)} [${f2(t.low)}, ${f2(t.high)}]  ${t.estimate - t.truth >= 0 ? '+' : ''}${f2(t.estimate - t.truth)}`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}
