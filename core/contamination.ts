/**
 * Which papers a model may have seen in training: the contamination-safe subsets
 * (docs/running-locally.md#contamination-safe-subsets). The rule is the original harness's
 * `--contamination_free`: a paper is contaminated for a cutoff month when its
 * first_commit_date is on or before the first day of that month; the common subset takes the
 * latest cutoff among the compared models. Unlike the original, which skips a model without a
 * cutoff, rcb never counts an unknown cutoff as safe: it names the model instead.
 */
import type { ModelInfo } from './records';
import type { PaperMeta } from './types';

export type Subset = 'all' | 'safe-common' | 'safe-per-model';

/**
 * A cutoff as `YYYY-MM`, or undefined when it is no month. Published configurations write
 * `2024-7` and `2024-11-17` too; the month rule only ever reads the month.
 */
export function normalizeCutoff(raw: unknown): string | undefined {
  if (typeof raw !== 'string') return undefined;
  const m = /^(\d{4})-(\d{1,2})(?:-\d{1,2})?$/.exec(raw.trim());
  if (!m) return undefined;
  const month = Number(m[2]);
  return month >= 1 && month <= 12 ? `${m[1]}-${String(month).padStart(2, '0')}` : undefined;
}

/** A paper is safe when its code was first public after the first day of the cutoff month; one without a date never is. */
export function isSafeFor(paper: PaperMeta, cutoff: string): boolean {
  if (!paper.first_commit_date) return false;
  return paper.first_commit_date > `${cutoff}-01`;
}

/** Models answered without a trained model (oracle, empty): no cutoff applies to them. */
export function cutoffFreeModels(models: Record<string, ModelInfo>): string[] {
  return Object.entries(models)
    .filter(([, m]) => m.config.offline === true)
    .map(([id]) => id);
}

/** What one model is scored on under a subset. */
export interface SubsetScope {
  /** The cutoff month its papers are safe for; null when every paper counts (`all`, or no trained model to guard against). */
  cutoff: string | null;
  /** Models whose unknown cutoff leaves this one without a safe subset (then it has no score). */
  unknown: string[];
}

/**
 * Each model's scope under `subset`. In safe-common one model without a known cutoff makes the
 * common cutoff unknown, so no model has a score; in safe-per-model only that model has none.
 */
export function subsetScopes(
  subset: Subset,
  models: string[],
  cutoffs: Record<string, string | undefined>,
  cutoffFree: ReadonlySet<string> = new Set(),
): Map<string, SubsetScope> {
  const trained = models.filter((m) => !cutoffFree.has(m));
  const unknownOf = (ms: string[]) => ms.filter((m) => !normalizeCutoff(cutoffs[m])).sort();
  const out = new Map<string, SubsetScope>();
  if (subset === 'safe-common') {
    const unknown = unknownOf(trained);
    const known = trained.map((m) => normalizeCutoff(cutoffs[m])!).filter(Boolean);
    const common = unknown.length || !known.length ? null : known.sort()[known.length - 1];
    for (const m of models) out.set(m, { cutoff: common, unknown });
    return out;
  }
  for (const m of models) {
    const free = subset === 'all' || cutoffFree.has(m);
    out.set(m, free ? { cutoff: null, unknown: [] } : { cutoff: normalizeCutoff(cutoffs[m]) ?? null, unknown: unknownOf([m]) });
  }
  return out;
}

/** Whether a paper counts for a model with this scope. */
export function inScope(scope: SubsetScope, paper: PaperMeta | undefined): boolean {
  if (scope.unknown.length) return false;
  if (scope.cutoff === null) return true;
  return !!paper && isSafeFor(paper, scope.cutoff);
}

/** The report's line for a model left without a score by unknown cutoffs. */
export function unknownCutoffNote(model: string, unknown: string[]): string {
  return `${model}: n/a: cutoff unknown for ${unknown.join(', ')}`;
}
