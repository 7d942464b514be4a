/**
 * 95% bootstrap confidence intervals for the benchmark's scores (SPEC 8): the spread over
 * samples says nothing about how much a score would move on other tasks, so the interval
 * resamples tasks, and, where a task has several samples, resamples its samples too.
 *
 * The generator is seeded from the scope's name, so the same run gives the same interval
 * in every format and on every machine.
 */

export interface ConfidenceInterval {
  /** Percent, like the score. */
  low: number;
  high: number;
}

/** One task as the bootstrap sees it: its weight and its samples' outcomes. */
export interface BootstrapTask {
  /** LoC for scaled scores, 1 for task-weighted ones. */
  weight: number;
  /** Pass per sample; a sample without a verdict counts as a failure, as in the score. */
  samples: boolean[];
}

/** Per-task value from c passing samples of n (c/n for pass@1; pass@k's estimator for k). */
export type TaskStatistic = (n: number, c: number) => number;

export const BOOTSTRAP_RESAMPLES = 2000;
export const INTERVAL_LEVEL = 0.95;

/** The method, stated in every report next to the intervals. */
export const INTERVAL_METHOD =
  `95% percentile bootstrap, ${BOOTSTRAP_RESAMPLES} resamples of the tasks in scope (and of the samples within each task when a task has several), fixed seed`;

export const passRate: TaskStatistic = (n, c) => (n ? c / n : 0);

/** mulberry32: small, fast and good enough to draw resampling indexes reproducibly. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** FNV-1a of a scope's name: the seed of its resampling. */
export function seedOf(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Σ w·stat / Σ w over the tasks, in percent. */
export function weightedScore(tasks: BootstrapTask[], stat: TaskStatistic = passRate): number {
  let total = 0;
  let sum = 0;
  for (const t of tasks) {
    total += t.weight;
    sum += t.weight * stat(t.samples.length, t.samples.filter(Boolean).length);
  }
  return total ? (100 * sum) / total : 0;
}

/**
 * The empirical quantile that is the smallest value whose share of the sorted resamples
 * reaches q (the "inverted CDF" definition), so a hand count over the exact resampling
 * distribution gives the same end points.
 */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}

function percentileInterval(values: number[] | Float64Array): ConfidenceInterval {
  // A typed array sorts numerically, and fast.
  values = Float64Array.from(values).sort();
  const tail = (1 - INTERVAL_LEVEL) / 2;
  return { low: quantile(values, tail), high: quantile(values, 1 - tail) };
}

/**
 * The count of passing samples when a task's n samples are drawn again with replacement is
 * Binomial(n, c/n): its CDF, so that one uniform number draws it instead of n.
 */
function binomialCdf(n: number, c: number): number[] {
  if (c === 0 || c === n) return Array.from({ length: n + 1 }, (_, k) => (k >= c ? 1 : 0));
  const p = c / n;
  const cdf: number[] = [];
  let prob = (1 - p) ** n;
  let acc = 0;
  for (let k = 0; k <= n; k++) {
    acc += prob;
    cdf.push(k === n ? 1 : acc);
    prob *= ((n - k) / (k + 1)) * (p / (1 - p));
  }
  return cdf;
}

function binomialSampler(n: number, c: number): (u: number) => number {
  const cdf = binomialCdf(n, c);
  return (u) => {
    let k = 0;
    while (k < n && u >= cdf[k]) k++;
    return k;
  };
}

/** One score to bootstrap: how each task is weighted and what it contributes. */
export interface BootstrapMetric {
  weight: (t: BootstrapTask) => number;
  stat: TaskStatistic;
}

/**
 * Intervals of several scores over the same tasks from one set of resamples (each
 * replicate draws its tasks and their samples once and scores every metric on them): a
 * report needs ten or so per model, and resampling for each alone cost seconds on a full
 * sweep. Null for each when there is no task.
 */
export function bootstrapIntervals(
  tasks: BootstrapTask[],
  seed: string,
  metrics: BootstrapMetric[],
  resamples = BOOTSTRAP_RESAMPLES,
): (ConfidenceInterval | null)[] {
  const n = tasks.length;
  if (!n) return metrics.map(() => null);
  const m = metrics.length;
  const random = seededRandom(seedOf(seed));
  // Flat tables, task-major, for the inner loop: weight[i*m + j]; metric j's contribution of
  // task i when c of its samples pass at value[offset[i] + c*m + j]; the task's resampled
  // pass count from its CDF at cdf[cdfAt[i] ...], or fixed[i] when it cannot vary (all
  // samples alike, which with one sample is every task).
  const weight = new Float64Array(n * m);
  const offset = new Int32Array(n);
  const cdfAt = new Int32Array(n);
  const samplesOf = new Int32Array(n);
  const fixed = new Int32Array(n);
  const cdfs: number[] = [];
  let size = 0;
  tasks.forEach((t, i) => {
    const ns = t.samples.length;
    const c = t.samples.filter(Boolean).length;
    offset[i] = size;
    size += (ns + 1) * m;
    samplesOf[i] = ns;
    fixed[i] = c === 0 || c === ns ? c : -1;
    cdfAt[i] = cdfs.length;
    if (fixed[i] < 0) cdfs.push(...binomialCdf(ns, c));
  });
  const cdf = Float64Array.from(cdfs);
  const value = new Float64Array(size);
  tasks.forEach((t, i) => {
    metrics.forEach((metric, j) => {
      weight[i * m + j] = metric.weight(t);
      for (let c = 0; c <= t.samples.length; c++) value[offset[i] + c * m + j] = metric.stat(t.samples.length, c);
    });
  });
  const out = metrics.map(() => new Float64Array(resamples));
  const total = new Float64Array(m);
  const sum = new Float64Array(m);
  for (let b = 0; b < resamples; b++) {
    total.fill(0);
    sum.fill(0);
    for (let r = 0; r < n; r++) {
      const i = Math.floor(random() * n);
      let c = fixed[i];
      if (c < 0) {
        const u = random();
        const at = cdfAt[i];
        const ns = samplesOf[i];
        c = 0;
        while (c < ns && u >= cdf[at + c]) c++;
      }
      const base = offset[i] + c * m;
      const wb = i * m;
      for (let j = 0; j < m; j++) {
        const w = weight[wb + j];
        total[j] += w;
        sum[j] += w * value[base + j];
      }
    }
    for (let j = 0; j < m; j++) out[j][b] = total[j] ? (100 * sum[j]) / total[j] : 0;
  }
  return out.map(percentileInterval);
}

/** The interval of `weightedScore(tasks, stat)`, or null when there is no task to resample. */
export function bootstrapInterval(
  tasks: BootstrapTask[],
  seed: string,
  stat: TaskStatistic = passRate,
  resamples = BOOTSTRAP_RESAMPLES,
): ConfidenceInterval | null {
  return bootstrapIntervals(tasks, seed, [{ weight: (t) => t.weight, stat }], resamples)[0];
}

/** One task seen by two runs of the same model: the pair `rcb compare` resamples together. */
export interface PairedTask {
  weight: number;
  a: boolean[];
  b: boolean[];
}

/**
 * The interval of score(B) - score(A) over tasks both runs hold, resampling the pairs (a
 * task drawn once counts in both runs), so the noise the two runs share cancels out.
 */
export function pairedDifferenceInterval(
  tasks: PairedTask[],
  seed: string,
  stat: TaskStatistic = passRate,
  resamples = BOOTSTRAP_RESAMPLES,
): ConfidenceInterval | null {
  const n = tasks.length;
  if (!n) return null;
  const random = seededRandom(seedOf(seed));
  const sampler = (s: boolean[]) => binomialSampler(s.length, s.filter(Boolean).length);
  const a = tasks.map((t) => sampler(t.a));
  const b = tasks.map((t) => sampler(t.b));
  const values: number[] = new Array(resamples);
  for (let r = 0; r < resamples; r++) {
    let total = 0;
    let diff = 0;
    for (let k = 0; k < n; k++) {
      const i = Math.floor(random() * n);
      const t = tasks[i];
      total += t.weight;
      diff += t.weight * (stat(t.b.length, b[i](random())) - stat(t.a.length, a[i](random())));
    }
    values[r] = total ? (100 * diff) / total : 0;
  }
  return percentileInterval(values);
}
