/**
 * 95% bootstrap confidence intervals for the benchmark's scores (SPEC 8). The spread over
 * samples says nothing about how much a score would move on other tasks, so the interval
 * resamples what the benchmark could have drawn differently: its tasks, and for the scaled
 * (LoC-weighted) scores its papers, since a paper's tasks share code (a cluster bootstrap).
 *
 * Each resampled task keeps its statistic from all its n samples (c/n for pass@1, the
 * unbiased 1 - C(n-c,k)/C(n,k) for pass@k): the samples are not resampled within a task.
 * Doing so, and computing pass@k on a resample with its repeats, is biased low, and gave
 * intervals below their own estimate (pass@2 95.17% [83.57, 94.69]).
 *
 * Every score is a ratio Σ num / Σ den over the units drawn (a unit is a task or a paper,
 * num its weighted statistic, den its weight), so the point estimate is the ratio over the
 * units as they are. Small scopes get the exact bootstrap distribution (every multiset of
 * units with its multinomial probability); larger ones 2000 seeded resamples. The seed comes
 * from the scope's name, so the same run gives the same interval in every format and on
 * every machine.
 */

export interface ConfidenceInterval {
  /** Percent, like the score. */
  low: number;
  high: number;
}

/** One task as the bootstrap sees it: its weight, its samples' outcomes, and its cluster. */
export interface BootstrapTask {
  /** LoC for scaled scores, 1 for task-weighted ones. */
  weight: number;
  /** Pass per sample; a sample without a verdict counts as a failure, as in the score. */
  samples: boolean[];
  /** The cluster the task is drawn with when the scope is clustered (its paper). */
  cluster?: string;
}

/** Per-task value from c passing samples of n (c/n for pass@1; pass@k's estimator for k). */
export type TaskStatistic = (n: number, c: number) => number;

/** One unit of resampling: per metric, its weighted statistic (num) and its weight (den). */
export interface BootstrapUnit {
  num: number[];
  den: number[];
}

/**
 * Math's functions held once: the resampling loops call them millions of times, and where
 * the global object is a vm context's (jest's test environment), each `Math.x` is a slow
 * global lookup (ten times the loop's own time, measured in issue 27).
 */
const { abs, ceil, floor, imul, max, min } = Math;

export const BOOTSTRAP_RESAMPLES = 2000;
export const INTERVAL_LEVEL = 0.95;
/** Scopes with at most this many units get the exact bootstrap distribution (C(11, 6) = 462 multisets). */
export const EXACT_MAX_UNITS = 6;

/** The method, stated in every report next to the intervals. */
export const INTERVAL_METHOD =
  `95% percentile bootstrap over tasks, each keeping its statistic from all its samples (pass@k: the unbiased estimator); ` +
  `scaled (LoC-weighted) scores resample papers (clustered by paper; by task when one paper is in scope); ` +
  `exact bootstrap distribution for ${EXACT_MAX_UNITS} units or fewer, else ${BOOTSTRAP_RESAMPLES} resamples with a fixed seed`;

export const passRate: TaskStatistic = (n, c) => (n ? c / n : 0);

/** mulberry32: small, fast and good enough to draw resampling indexes reproducibly. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = imul(t ^ (t >>> 15), t | 1);
    t ^= t + imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** FNV-1a of a scope's name: the seed of its resampling. */
export function seedOf(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = imul(h, 0x01000193);
  }
  return h >>> 0;
}

const passes = (samples: boolean[]) => samples.filter(Boolean).length;

/** Σ w·stat / Σ w over the tasks, in percent. */
export function weightedScore(tasks: BootstrapTask[], stat: TaskStatistic = passRate): number {
  let total = 0;
  let sum = 0;
  for (const t of tasks) {
    total += t.weight;
    sum += t.weight * stat(t.samples.length, passes(t.samples));
  }
  return total ? (100 * sum) / total : 0;
}

/**
 * The empirical quantile that is the smallest value whose share of the sorted resamples
 * reaches q (the "inverted CDF" definition), so a hand count over the exact resampling
 * distribution gives the same end points.
 */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  const i = min(sorted.length - 1, max(0, ceil(q * sorted.length) - 1));
  return sorted[i];
}

const TAIL = (1 - INTERVAL_LEVEL) / 2;

/** The same quantiles of a discrete distribution given as values with probabilities (one sort for all). */
export function weightedQuantiles(values: Float64Array, probs: Float64Array, qs: number[]): number[] {
  const order = Uint32Array.from(values.keys()).sort((a, b) => values[a] - values[b]);
  return qs.map((q) => {
    let acc = 0;
    for (const i of order) {
      acc += probs[i];
      // Probabilities are multiples of 1/n^n: a true tie with q (1/40 or 39/40) needs 10 | n, so
      // the slack only absorbs rounding of the running sum.
      if (acc >= q - 1e-12) return values[i];
    }
    return values[order[order.length - 1]];
  });
}

export function weightedQuantile(values: Float64Array, probs: Float64Array, q: number): number {
  return weightedQuantiles(values, probs, [q])[0];
}

/** The ratio Σ num / Σ den of each metric over the units as they are, in percent. */
export function pointEstimates(units: BootstrapUnit[], metrics: number): number[] {
  return Array.from({ length: metrics }, (_, j) => {
    let num = 0;
    let den = 0;
    for (const u of units) {
      num += u.num[j];
      den += u.den[j];
    }
    return den ? (100 * num) / den : 0;
  });
}

/** A replicate equal to the estimate but for rounding (the sums ran in another order) is the estimate. */
function snap(value: number, estimate: number): number {
  return abs(value - estimate) <= 1e-9 * max(1, abs(estimate)) ? estimate : value;
}

/**
 * The exact bootstrap distribution: every multiset of n units drawn from n, with its
 * multinomial probability n!/(Π k_i!) / n^n. Values per metric, and their probabilities.
 */
export function exactDistribution(
  units: BootstrapUnit[],
  metrics: number,
  estimates: number[] = pointEstimates(units, metrics),
): { values: Float64Array[]; probs: Float64Array } {
  const n = units.length;
  const values: number[][] = Array.from({ length: metrics }, () => []);
  const probs: number[] = [];
  const num = new Float64Array(metrics);
  const den = new Float64Array(metrics);
  const factorial = [1];
  for (let i = 1; i <= n; i++) factorial.push(factorial[i - 1] * i);
  const base = factorial[n] / n ** n;
  const visit = (i: number, left: number, coef: number) => {
    if (i === n - 1) {
      // The last unit takes what is left.
      for (let j = 0; j < metrics; j++) {
        const d = den[j] + left * units[i].den[j];
        values[j].push(snap(d ? (100 * (num[j] + left * units[i].num[j])) / d : 0, estimates[j]));
      }
      probs.push(coef / factorial[left]);
      return;
    }
    for (let k = 0; k <= left; k++) {
      for (let j = 0; j < metrics; j++) {
        num[j] += k * units[i].num[j];
        den[j] += k * units[i].den[j];
      }
      visit(i + 1, left - k, coef / factorial[k]);
      for (let j = 0; j < metrics; j++) {
        num[j] -= k * units[i].num[j];
        den[j] -= k * units[i].den[j];
      }
    }
  };
  visit(0, n, base);
  return { values: values.map((v) => Float64Array.from(v)), probs: Float64Array.from(probs) };
}

export interface IntervalOptions {
  /** Resamples when the scope is too large for the exact distribution. */
  resamples?: number;
  /**
   * The point estimates as the report prints them (SPEC 8's mean over samples, summed in its
   * own order): a replicate equal to one but for rounding is taken as it, so an interval
   * never misses its estimate by a last bit. Default: the ratios over the units.
   */
  estimates?: number[];
}

/**
 * Intervals of several ratio scores over the same units from one resampling (each
 * replicate draws its units once and scores every metric on them). Null for each metric
 * when there is no unit.
 */
export function unitIntervals(units: BootstrapUnit[], metrics: number, seed: string, opts: IntervalOptions = {}): (ConfidenceInterval | null)[] {
  const n = units.length;
  const resamples = opts.resamples ?? BOOTSTRAP_RESAMPLES;
  if (!n) return Array.from({ length: metrics }, () => null);
  const estimates = opts.estimates ?? pointEstimates(units, metrics);
  if (n <= EXACT_MAX_UNITS) {
    const { values, probs } = exactDistribution(units, metrics, estimates);
    return values.map((v) => {
      const [low, high] = weightedQuantiles(v, probs, [TAIL, 1 - TAIL]);
      return { low, high };
    });
  }
  // Flat, unit-major tables for the inner loop.
  const num = new Float64Array(n * metrics);
  const den = new Float64Array(n * metrics);
  units.forEach((u, i) => {
    for (let j = 0; j < metrics; j++) {
      num[i * metrics + j] = u.num[j];
      den[i * metrics + j] = u.den[j];
    }
  });
  const random = seededRandom(seedOf(seed));
  const out = Array.from({ length: metrics }, () => new Float64Array(resamples));
  const sumNum = new Float64Array(metrics);
  const sumDen = new Float64Array(metrics);
  for (let b = 0; b < resamples; b++) {
    sumNum.fill(0);
    sumDen.fill(0);
    for (let r = 0; r < n; r++) {
      const at = floor(random() * n) * metrics;
      for (let j = 0; j < metrics; j++) {
        sumNum[j] += num[at + j];
        sumDen[j] += den[at + j];
      }
    }
    for (let j = 0; j < metrics; j++) out[j][b] = snap(sumDen[j] ? (100 * sumNum[j]) / sumDen[j] : 0, estimates[j]);
  }
  return out.map((values) => {
    values.sort();
    return { low: quantile(values, TAIL), high: quantile(values, 1 - TAIL) };
  });
}

/** One score to bootstrap: how each task is weighted and what it contributes. */
export interface BootstrapMetric {
  weight: (t: BootstrapTask) => number;
  stat: TaskStatistic;
}

/**
 * The units of a scope: one per task, or, clustered, one per cluster (the sums of its tasks).
 * A clustered scope with a single cluster falls back to its tasks: one paper drawn again is
 * the same paper, an interval of zero width that would claim a certainty the data lacks.
 */
export function unitsOf(tasks: BootstrapTask[], metrics: BootstrapMetric[], clustered: boolean): BootstrapUnit[] {
  const unitOf = (t: BootstrapTask): BootstrapUnit => {
    const c = passes(t.samples);
    const den = metrics.map((m) => m.weight(t));
    return { den, num: metrics.map((m, j) => den[j] * m.stat(t.samples.length, c)) };
  };
  const clusters = new Set(tasks.map((t) => t.cluster ?? ''));
  if (!clustered || clusters.size < 2) return tasks.map(unitOf);
  const byCluster = new Map<string, BootstrapUnit>();
  for (const t of tasks) {
    const u = unitOf(t);
    const key = t.cluster ?? '';
    const sum = byCluster.get(key);
    if (!sum) byCluster.set(key, u);
    else
      for (let j = 0; j < metrics.length; j++) {
        sum.num[j] += u.num[j];
        sum.den[j] += u.den[j];
      }
  }
  return [...byCluster.values()];
}

/**
 * Intervals of several scores over the same tasks from one resampling of the tasks (or, with
 * `clustered`, of their clusters). Null for each when there is no task.
 */
export function bootstrapIntervals(
  tasks: BootstrapTask[],
  seed: string,
  metrics: BootstrapMetric[],
  opts: IntervalOptions & { clustered?: boolean } = {},
): (ConfidenceInterval | null)[] {
  return unitIntervals(unitsOf(tasks, metrics, !!opts.clustered), metrics.length, seed, opts);
}

/** The interval of `weightedScore(tasks, stat)`, or null when there is no task to resample. */
export function bootstrapInterval(
  tasks: BootstrapTask[],
  seed: string,
  stat: TaskStatistic = passRate,
  opts: IntervalOptions & { clustered?: boolean } = {},
): ConfidenceInterval | null {
  return bootstrapIntervals(tasks, seed, [{ weight: (t) => t.weight, stat }], opts)[0];
}

/** One task seen by two runs of the same model: the pair `rcb compare` resamples together. */
export interface PairedTask {
  weight: number;
  a: boolean[];
  b: boolean[];
}

/**
 * The interval of score(B) - score(A) over tasks both runs hold, resampling the pairs (a
 * task drawn once counts in both runs), so the noise the two runs share cancels out. Each
 * task keeps its statistic from all its samples in each run, as in the scores.
 */
export function pairedDifferenceInterval(
  tasks: PairedTask[],
  seed: string,
  stat: TaskStatistic = passRate,
  resamples = BOOTSTRAP_RESAMPLES,
): ConfidenceInterval | null {
  const units = tasks.map((t) => ({
    num: [t.weight * (stat(t.b.length, passes(t.b)) - stat(t.a.length, passes(t.a)))],
    den: [t.weight],
  }));
  return unitIntervals(units, 1, seed, { resamples })[0];
}
