/**
 * `rcb contamination RUN`: every model's scaled pass@1 on all papers beside its
 * contamination-safe scores, common and own cutoff, in one table
 * (docs/running-locally.md#reproducing-a-published-figure).
 */
import type { Judge } from '../types';
import type { RunRecord, TaskRecord, Verdict } from '../records';
import { scoreStoredRun, type ModelScore, type ScoreReport } from '../scoring';
import { commonCutoffLabel, emptySubsetNotes } from './format';

export interface ContaminationRow {
  model: string;
  displayName: string;
  cutoff: string | null;
  all: number | null;
  safeCommon: number | null;
  safePerModel: number | null;
  /** Papers each safe score rests on. */
  safeCommonPapers: number;
  safePerModelPapers: number;
}

export interface ContaminationTable {
  judge: Judge;
  /** The safe-common subset: its cutoff line, and its papers. */
  common: { label: string; papers: string[] };
  rows: ContaminationRow[];
  notes: string[];
}

const score = (m: ModelScore | undefined) => (m?.tasks ? m.scaled.mean : null);

export function contaminationTable(run: RunRecord, tasks: TaskRecord[], verdicts: Map<string, Verdict>, judge: Judge): ContaminationTable {
  const of = (subset: 'all' | 'safe-common' | 'safe-per-model') => scoreStoredRun(run, tasks, verdicts, judge, subset);
  const [all, common, perModel] = [of('all'), of('safe-common'), of('safe-per-model')];
  const find = (r: ScoreReport, model: string) => r.models.find((m) => m.model === model);
  const rows = all.models.map((m): ContaminationRow => {
    const c = find(common, m.model);
    const p = find(perModel, m.model);
    return {
      model: m.model,
      displayName: run.models[m.model]?.displayName ?? m.model,
      cutoff: run.models[m.model]?.knowledgeCutoff ?? null,
      all: score(m),
      safeCommon: score(c),
      safePerModel: score(p),
      safeCommonPapers: c?.paperIds.length ?? 0,
      safePerModelPapers: p?.paperIds.length ?? 0,
    };
  });
  const commonPapers = [...new Set(common.models.flatMap((m) => m.paperIds))].sort();
  const notes = [...new Set([...emptySubsetNotes(common, run), ...emptySubsetNotes(perModel, run)])];
  return { judge, common: { label: commonCutoffLabel(common), papers: commonPapers }, rows, notes };
}

const cell = (x: number | null) => (x === null ? 'n/a' : x.toFixed(2));
const delta = (r: ContaminationRow) => (r.all === null || r.safeCommon === null ? 'n/a' : (r.safeCommon - r.all).toFixed(2));

const HEADER = ['model', 'cutoff', 'all', 'safe-common', 'change', 'safe-per-model', 'own papers'];

function cells(r: ContaminationRow): string[] {
  return [r.displayName, r.cutoff ?? 'unknown', cell(r.all), cell(r.safeCommon), delta(r), cell(r.safePerModel), String(r.safePerModelPapers)];
}

function preamble(t: ContaminationTable): string[] {
  return [
    `scaled pass@1 %, ${t.judge} judge; safe-common: ${t.common.label}, ${t.common.papers.length} paper(s): ${t.common.papers.join(', ') || 'none'}`,
    'a paper is contaminated for a cutoff month when its first_commit_date is on or before the first day of that month',
  ];
}

export function formatContaminationTable(t: ContaminationTable): string {
  const rows = [HEADER, ...t.rows.map(cells)];
  const widths = HEADER.map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => (i ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ');
  return `${[...preamble(t), '', line(HEADER), widths.map((w) => '-'.repeat(w)).join('  '), ...t.rows.map((r) => line(cells(r))), ...t.notes.map((n) => `- ${n}`)].join('\n')}\n`;
}

export function formatContaminationMarkdown(t: ContaminationTable): string {
  const esc = (s: string) => s.replace(/\|/g, '\\|');
  const row = (r: string[]) => `| ${r.map(esc).join(' | ')} |`;
  const sep = `|${HEADER.map((_, i) => (i < 2 ? ' --- |' : ' ---: |')).join('')}`;
  return `${[...preamble(t), '', row(HEADER), sep, ...t.rows.map((r) => row(cells(r))), ...t.notes.map((n) => `- ${esc(n)}`)].join('\n')}\n`;
}
