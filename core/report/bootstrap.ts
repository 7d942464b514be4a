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
export function quantile(sorted: number[], q: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}

function percentileInterval(values: number[]): ConfidenceInterval {
  values.sort((a, b) => a - b);
  const tail = (1 - INTERVAL_LEVEL) / 2;
  return { low: quantile(values, tail), high: quantile(values, 1 - tail) };
}

/** One bootstrap replicate's count of passing samples of a task: n draws from its own samples. */
function resampledPasses(samples: boolean[], random: () => number): number {
  const n = samples.length;
  if (n === 1) return samples[0] ? 1 : 0;
  let c = 0;
  for (let j = 0; j < n; j++) if (samples[Math.floor(random() * n)]) c++;
  return c;
}

/** The interval of `weightedScore(tasks, stat)`, or null when there is no task to resample. */
export function bootstrapInterval(
  tasks: BootstrapTask[],
  seed: string,
  stat: TaskStatistic = passRate,
  resamples = BOOTSTRAP_RESAMPLES,
): ConfidenceInterval | null {
  const n = tasks.length;
  if (!n) return null;
  const random = seededRandom(seedOf(seed));
  const values: number[] = new Array(resamples);
  for (let b = 0; b < resamples; b++) {
    let total = 0;
    let sum = 0;
    for (let i = 0; i < n; i++) {
      const t = tasks[Math.floor(random() * n)];
      total += t.weight;
      sum += t.weight * stat(t.samples.length, resampledPasses(t.samples, random));
    }
    values[b] = total ? (100 * sum) / total : 0;
  }
  return percentileInterval(values);
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
  const values: number[] = new Array(resamples);
  for (let b = 0; b < resamples; b++) {
    let total = 0;
    let diff = 0;
    for (let i = 0; i < n; i++) {
      const t = tasks[Math.floor(random() * n)];
      total += t.weight;
      diff += t.weight * (stat(t.b.length, resampledPasses(t.b, random)) - stat(t.a.length, resampledPasses(t.a, random)));
    }
    values[b] = total ? (100 * diff) / total : 0;
  }
  return percentileInterval(values);
}
