/**
 * The screening stage of a sweep (core/sweep/sweep-file.ts, docs/subsets.md): which models go
 * on to the full set, from their estimated full-set scores on the subset.
 */
import type { EstimatedFull } from '../report/subset-estimate';
import type { SweepScreening } from './sweep-file';

export interface ScreeningDecision {
  /** Models that run on the full set, in the sweep's order. */
  kept: string[];
  dropped: string[];
  /** One line per model: its estimate and why it is kept or dropped. */
  lines: string[];
}

const pct = (x: number) => x.toFixed(2);

/**
 * Keep the models whose interval's upper end reaches the threshold, or the `top` of highest
 * estimate (ties by name). A model with no verdict on the subset has no evidence against it,
 * and is kept.
 */
export function screenModels(screening: Pick<SweepScreening, 'threshold' | 'top'>, models: string[], estimates: Map<string, EstimatedFull>): ScreeningDecision {
  // A refused estimate (too few subset tasks judged) screens nothing: the model is kept.
  const judged = models.filter((m) => (estimates.get(m)?.observedTasks ?? 0) > 0 && !estimates.get(m)?.refused);
  let passes: Set<string>;
  if (screening.threshold !== null) {
    const t = screening.threshold;
    passes = new Set(judged.filter((m) => estimates.get(m)!.ci.high >= t));
  } else {
    const ranked = [...judged].sort((a, b) => estimates.get(b)!.mean - estimates.get(a)!.mean || (a < b ? -1 : a > b ? 1 : 0));
    passes = new Set(ranked.slice(0, screening.top ?? ranked.length));
  }
  const why = (keep: boolean) =>
    screening.threshold !== null
      ? `its interval ${keep ? 'reaches' : 'stays below'} ${pct(screening.threshold)}`
      : `${keep ? 'among' : 'not among'} the top ${screening.top} by estimate`;
  const kept: string[] = [];
  const dropped: string[] = [];
  const lines: string[] = [];
  for (const m of models) {
    const e = estimates.get(m);
    if (!e || e.observedTasks === 0) {
      kept.push(m);
      lines.push(`${m}: no verdict on the subset's tasks; kept (nothing to screen it on)`);
      continue;
    }
    if (e.refused) {
      kept.push(m);
      lines.push(`${m}: estimate ${e.refused}; kept (nothing to screen it on)`);
      continue;
    }
    const keep = passes.has(m);
    (keep ? kept : dropped).push(m);
    lines.push(`${m}: estimated ~${pct(e.mean)} [${pct(e.ci.low)}, ${pct(e.ci.high)}] (estimate); ${keep ? 'kept' : 'dropped'}: ${why(keep)}`);
  }
  return { kept, dropped, lines };
}
