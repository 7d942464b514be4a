/**
 * The subset method: fit a 2PL on the models' verdicts (irt.ts), choose the N tasks with the
 * largest LoC² × variance of the verdict across the fitted models (the tasks whose outcome
 * moves the scaled score most between models), and calibrate the interval by leave-one-out
 * over the fitted models themselves: each in turn is left out of the fit and the choice, its
 * score estimated from its subset verdicts, and the interval widened (never narrowed) until
 * 95% of those left out lie inside it.
 */
import { seededRandom } from '../report/bootstrap';
import {
  estimateScore,
  fit2pl,
  FIT_DEFAULTS,
  GRID_DEFAULTS,
  type AbilityGrid,
  type Fit2pl,
  type Fit2plOptions,
  type ItemParams,
  type ScoreEstimate,
} from './irt';
import { scaledScore, type VerdictMatrix } from './matrix';

export const METHOD_NAME = 'irt-2pl-loc2var';

export interface MethodOptions {
  fit: Fit2plOptions;
  grid: AbilityGrid;
  /** Standard deviation of the normal prior on a new model's ability. */
  priorSd: number;
  /** Normal quantile of the interval (1.96 for 95%). */
  z: number;
  /** Calibrate the interval's width by leave-one-out over the fitted models. */
  calibrate: boolean;
  /** Share of the left-out fitted models the calibrated interval must hold. */
  coverage: number;
}

export const METHOD_DEFAULTS: MethodOptions = { fit: FIT_DEFAULTS, grid: GRID_DEFAULTS, priorSd: 1, z: 1.96, calibrate: true, coverage: 0.95 };

/** Fits keyed by the set of models they were made on: leave-one-out refits the same sets many times. */
export class FitCache {
  private readonly fits = new Map<string, Fit2pl>();
  constructor(private readonly opts: Fit2plOptions = FIT_DEFAULTS) {}

  /** The 2PL fitted on rows `rows` of `m`. */
  fit(m: VerdictMatrix, rows: number[]): Fit2pl {
    const key = rows.map((r) => m.models[r]).join('\n');
    let fit = this.fits.get(key);
    if (!fit) {
      const T = m.tasks.length;
      const y = new Float64Array(rows.length * T);
      rows.forEach((r, i) => y.set(m.y.subarray(r * T, (r + 1) * T), i * T));
      fit = fit2pl(y, rows.length, T, this.opts);
      this.fits.set(key, fit);
    }
    return fit;
  }

  get size(): number {
    return this.fits.size;
  }
}

/**
 * The N tasks of largest LoC² × variance of the verdict over `rows` (tasks a model has no
 * verdict on are left out of that task's variance). Ties are broken by a shuffle seeded with
 * `seed`, so equal scores do not favour the first paper in the alphabet.
 */
export function selectTasks(m: VerdictMatrix, rows: number[], size: number, seed: number): number[] {
  const T = m.tasks.length;
  if (size > T) throw new Error(`--size ${size}: the verdicts have only ${T} tasks`);
  const score = new Float64Array(T);
  for (let j = 0; j < T; j++) {
    let n = 0;
    let s = 0;
    let ss = 0;
    for (const r of rows) {
      const v = m.y[r * T + j];
      if (Number.isNaN(v)) continue;
      n++;
      s += v;
      ss += v * v;
    }
    const variance = n ? Math.max(0, ss / n - (s / n) ** 2) : 0;
    score[j] = m.tasks[j].loc ** 2 * variance;
  }
  const order = shuffled(T, seed);
  order.sort((x, y) => score[y] - score[x]);
  return order.slice(0, size).sort((x, y) => x - y);
}

/** 0..n-1 in a seeded random order (Fisher-Yates). */
export function shuffled(n: number, seed: number): number[] {
  const random = seededRandom(seed);
  const out = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const k = Math.floor(random() * (i + 1));
    [out[i], out[k]] = [out[k], out[i]];
  }
  return out;
}

/** A fitted subset: the chosen tasks and what the estimator needs. */
export interface FittedSubset {
  /** Indexes into the matrix's tasks, ascending. */
  tasks: number[];
  params: ItemParams;
  /** Ability of each fitted model (the rows it was fitted on, in order). */
  theta: Float64Array;
  /** Factor on the posterior's standard deviation (≥ 1), from the calibration. */
  inflation: number;
  /** The left-out fitted models' standardised errors the inflation was read from. */
  calibrationZ: number[];
}

/** A row's verdicts on some tasks, the tasks it has no verdict on dropped. */
export function observedOn(m: VerdictMatrix, row: number, tasks: number[]): { tasks: number[]; values: number[] } {
  const T = m.tasks.length;
  const out = { tasks: [] as number[], values: [] as number[] };
  for (const j of tasks) {
    const v = m.y[row * T + j];
    if (Number.isNaN(v)) continue;
    out.tasks.push(j);
    out.values.push(v);
  }
  return out;
}

export function locOf(m: VerdictMatrix): Float64Array {
  return Float64Array.from(m.tasks, (t) => t.loc);
}

/** Choose `size` tasks from rows `rows` of `m` and fit the estimator on them. */
export function fitSubset(
  m: VerdictMatrix,
  rows: number[],
  size: number,
  seed: number,
  opts: MethodOptions = METHOD_DEFAULTS,
  cache = new FitCache(opts.fit),
): FittedSubset {
  if (rows.length < 2) throw new Error(`a subset needs the verdicts of at least 2 models (got ${rows.length})`);
  const fit = cache.fit(m, rows);
  const tasks = selectTasks(m, rows, size, seed);
  const calibrationZ: number[] = [];
  let inflation = 1;
  if (opts.calibrate && rows.length >= 3) {
    const loc = locOf(m);
    for (const left of rows) {
      const rest = rows.filter((r) => r !== left);
      const inner = cache.fit(m, rest);
      const chosen = selectTasks(m, rest, size, seed);
      const obs = observedOn(m, left, chosen);
      const e = estimateScore(inner, loc, obs.tasks, obs.values, opts.priorSd, opts.grid);
      calibrationZ.push(e.sd > 0 ? Math.abs(e.mean - scaledScore(m, left)) / e.sd : 0);
    }
    const sorted = [...calibrationZ].sort((x, y) => x - y);
    const q = sorted[Math.min(sorted.length - 1, Math.ceil(opts.coverage * sorted.length) - 1)];
    inflation = Math.max(1, q / opts.z);
  }
  return { tasks, params: { a: fit.a, b: fit.b }, theta: fit.theta, inflation, calibrationZ };
}

/** An estimate with its interval, in percent. */
export interface IntervalEstimate extends ScoreEstimate {
  low: number;
  high: number;
}

/**
 * The full-set estimate of a model from its verdicts on the observed tasks, with the interval
 * mean ± z·inflation·sd, kept within what the observed verdicts allow.
 */
export function estimateWithInterval(
  params: ItemParams,
  loc: ArrayLike<number>,
  observed: { tasks: number[]; values: number[] },
  inflation: number,
  opts: Pick<MethodOptions, 'priorSd' | 'z' | 'grid'>,
): IntervalEstimate {
  const e = estimateScore(params, loc, observed.tasks, observed.values, opts.priorSd, opts.grid);
  const half = opts.z * inflation * e.sd;
  return { ...e, low: Math.max(e.floor, e.mean - half), high: Math.min(e.ceiling, e.mean + half) };
}
