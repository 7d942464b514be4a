/**
 * Pass rate against snippet length: task samples binned by their snippet's lines of code, the
 * share that passed the judge in each bin. The page's chart and the printed figure both read it.
 */
import type { Judge } from '../types';
import type { LoadedRun } from './loaded-run';

export const LOC_BINS: [number, number, string][] = [
  [1, 1, '1'],
  [2, 3, '2-3'],
  [4, 7, '4-7'],
  [8, 15, '8-15'],
  [16, 31, '16-31'],
  [32, Infinity, '32+'],
];

export interface LengthBin {
  passed: number;
  total: number;
}

const binOf = (loc: number) => LOC_BINS.findIndex(([lo, hi]) => loc >= lo && loc <= hi);

/** One model's bins (in LOC_BINS order) over the papers in scope; `used` gathers the bins any task fell in. */
export function lengthBins(loaded: LoadedRun, model: string, papers: readonly string[], judge: Judge, used: Set<number>): LengthBin[] {
  const bins = LOC_BINS.map(() => ({ passed: 0, total: 0 }));
  const inScope = new Set(papers);
  for (const t of loaded.tasks) {
    if (t.model !== model || !inScope.has(t.paper)) continue;
    const b = binOf(t.loc);
    used.add(b);
    bins[b].total++;
    const v = loaded.verdicts.get(t.taskId);
    if (v && (judge === 'strict' ? v.strictPass : v.officialPass)) bins[b].passed++;
  }
  return bins;
}
