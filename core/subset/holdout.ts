/**
 * Extrapolation checks of the subset method (docs/subsets.md#extrapolation): the models a
 * screen is for are new ones, often stronger than every model before. A split holds out the
 * `n` strongest models (by full-set score) or the `n` newest (by knowledge cutoff) together:
 * the subset is chosen, fitted and calibrated on the others, and each held-out model is
 * estimated from its verdicts on it, with the 90% interval.
 */
import { estimateWithInterval, FitCache, fitSubset, locOf, METHOD_DEFAULTS, observedOn, type MethodOptions } from './method';
import { scaledScore, type VerdictMatrix } from './matrix';
import { summarise, type ErrorSummary, type HeldOutResult } from './check';

export type HoldoutKind = 'strongest' | 'newest';

export interface HoldoutSpec {
  kind: HoldoutKind;
  n: number;
}

/** `strongest:5` or `newest:5`; errors name the flag. */
export function parseHoldout(text: string): HoldoutSpec {
  const m = /^(strongest|newest):(\d+)$/.exec(text);
  if (!m || Number(m[2]) < 1) throw new Error(`--holdout ${text}: must be strongest:N or newest:N, N at least 1`);
  return { kind: m[1] as HoldoutKind, n: Number(m[2]) };
}

export interface HoldoutCheck {
  spec: HoldoutSpec;
  size: number;
  heldOut: HeldOutResult[];
  summary: ErrorSummary;
  /** The issue's goals: every model within 4 points, MAE at most 2, at least 4 of 5 inside the 90% interval. */
  goals: { within4: boolean; mae2: boolean; inside: boolean };
}

/** The 90% interval: the calibration reads its inflation at the same coverage. */
const NINETY: MethodOptions = { ...METHOD_DEFAULTS, z: 1.645, coverage: 0.9 };

/** The rows a split holds out: the strongest by score, or the newest by cutoff (ties by id; an unknown cutoff is never newest). */
export function heldOutRows(m: VerdictMatrix, spec: HoldoutSpec, cutoffs: Record<string, string | undefined>): number[] {
  const rows = m.models.map((_, i) => i);
  const key = (i: number) => (spec.kind === 'strongest' ? scaledScore(m, i) : 0);
  const sorted =
    spec.kind === 'strongest'
      ? rows.sort((a, b) => key(b) - key(a) || m.models[a].localeCompare(m.models[b]))
      : rows
          .filter((i) => !!cutoffs[m.models[i]])
          .sort((a, b) => cutoffs[m.models[b]]!.localeCompare(cutoffs[m.models[a]]!) || m.models[a].localeCompare(m.models[b]));
  if (sorted.length - spec.n < 3 || spec.n > sorted.length) throw new Error(`--holdout ${spec.kind}:${spec.n}: leaves fewer than 3 models to fit on`);
  return sorted.slice(0, spec.n);
}

export function checkHoldout(m: VerdictMatrix, spec: HoldoutSpec, size: number, seed: number, cutoffs: Record<string, string | undefined>): HoldoutCheck {
  const out = new Set(heldOutRows(m, spec, cutoffs));
  const rows = m.models.map((_, i) => i).filter((i) => !out.has(i));
  const fitted = fitSubset(m, rows, size, seed, NINETY, new FitCache(NINETY.fit));
  const loc = locOf(m);
  const heldOut = [...out].map((h): HeldOutResult => {
    const e = estimateWithInterval(fitted.params, loc, observedOn(m, h, fitted.tasks), fitted.inflation, NINETY);
    return { model: m.models[h], truth: scaledScore(m, h), estimate: e.mean, low: e.low, high: e.high };
  });
  const summary = summarise(heldOut);
  const inside = heldOut.filter((r) => r.low <= r.truth && r.truth <= r.high).length;
  return {
    spec,
    size,
    heldOut,
    summary,
    goals: { within4: summary.max <= 4, mae2: summary.mae <= 2, inside: inside >= Math.ceil(0.8 * heldOut.length) },
  };
}

const f2 = (x: number) => x.toFixed(2);

export function formatHoldout(c: HoldoutCheck): string {
  const inside = c.heldOut.filter((r) => r.low <= r.truth && r.truth <= r.high).length;
  const yes = (b: boolean) => (b ? 'met' : 'NOT met');
  return `${[
    `holdout ${c.spec.kind}:${c.spec.n}, size ${c.size}: the subset chosen, fitted and calibrated without them; 90% interval`,
    ...c.heldOut.map(
      (t) =>
        `  ${t.model.padEnd(34)} ${f2(t.truth).padStart(6)} → ${f2(t.estimate).padStart(6)} [${f2(t.low)}, ${f2(t.high)}]  ${t.estimate - t.truth >= 0 ? '+' : ''}${f2(t.estimate - t.truth)}`,
    ),
    `MAE ${f2(c.summary.mae)}, max ${f2(c.summary.max)}, ${inside} of ${c.heldOut.length} inside their interval`,
    `goals: every model within 4 points ${yes(c.goals.within4)}; MAE at most 2.0 ${yes(c.goals.mae2)}; at least 4 of 5 inside ${yes(c.goals.inside)}`,
  ].join('\n')}\n`;
}
