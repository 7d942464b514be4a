/**
 * The original harness decides contamination from the pset's papers.yaml, not from the
 * metadata its results file copied at the time: the published overall_stats.json says minp was
 * first committed on 2025-03-15, the public papers.yaml says 2024-11-13, and the published
 * 13-paper safe subset follows papers.yaml (docs/running-locally.md#reproducing-a-published-figure).
 */
import type { PaperMeta } from '../types';
import type { ImportedRun } from './official';

/** One paper whose date the pset changed. */
export interface DateChange {
  paper: string;
  inFile: string | undefined;
  inPset: string | undefined;
}

/**
 * The imported run with each paper's first_commit_date taken from the pset's metadata (the
 * verbatim metadata of the file is kept for export), and the papers whose date changed.
 */
export function withPsetDates(imported: ImportedRun, psetPapers: PaperMeta[]): { imported: ImportedRun; changes: DateChange[] } {
  const byId = new Map(psetPapers.map((p) => [p.id, p]));
  const changes: DateChange[] = [];
  const papers = imported.run.papers.map((p) => {
    const pset = byId.get(p.id);
    if (!pset || pset.first_commit_date === p.first_commit_date) return p;
    changes.push({ paper: p.id, inFile: p.first_commit_date, inPset: pset.first_commit_date });
    return { ...p, first_commit_date: pset.first_commit_date };
  });
  return { imported: { ...imported, run: { ...imported.run, papers } }, changes };
}

/** Papers of the run the pset does not hold (their dates stay the file's). */
export function papersMissingFromPset(imported: ImportedRun, psetPapers: PaperMeta[]): string[] {
  const ids = new Set(psetPapers.map((p) => p.id));
  return imported.run.papers.map((p) => p.id).filter((id) => !ids.has(id));
}

export function describeDateChange(c: DateChange, file: string, pset: string): string {
  return `${c.paper}: first_commit_date ${c.inFile ?? '(none)'} in ${file}, ${c.inPset ?? '(none)'} in ${pset}; the pset's is used, as the original harness does`;
}
