/**
 * Report formats: a leaderboard table, markdown, CSV and JSON. Every format says which
 * judge and which subset its scores use (SPEC 7, 9).
 */
import type { FailureClass } from '../types';
import type { RunRecord } from '../store';
import type { ModelScore, ScoreReport } from '../scoring';

export type ReportFormat = 'table' | 'json' | 'csv' | 'markdown' | 'official';
export const REPORT_FORMATS: ReportFormat[] = ['table', 'json', 'csv', 'markdown', 'official'];

const pct = (x: number) => x.toFixed(2);
const meanStd = (m: { mean: number; std: number }) => `${pct(m.mean)} ± ${pct(m.std)}`;

export function failureSummary(failures: Partial<Record<FailureClass, number>>): string {
  const parts = Object.entries(failures)
    .filter(([, n]) => n)
    .sort(([, a], [, b]) => b! - a!)
    .map(([cls, n]) => `${cls} ${n}`);
  return parts.length ? parts.join(', ') : '-';
}

export function describeScope(report: ScoreReport): string {
  const judge = report.judge === 'strict' ? 'strict judge (tests must demonstrably run to the end; integrity flags fail)' : 'official judge (original harness rule)';
  const subset =
    report.subset === 'all'
      ? 'all papers'
      : report.subset === 'safe-common'
        ? `contamination-safe papers, common cutoff ${report.commonCutoff ?? 'none known'}`
        : 'contamination-safe papers, each model at its own cutoff';
  return `scores use the ${judge}; subset: ${subset}`;
}

function rows(report: ScoreReport): string[][] {
  return report.models.map((m) => [
    m.model,
    meanStd(m.scaled),
    meanStd(m.pass1),
    String(m.tasks),
    String(m.samples),
    failureSummary(m.failures) + (m.pending ? ` (pending ${m.pending})` : ''),
  ]);
}

const HEADER = ['model', 'scaled pass@1 %', 'pass@1 %', 'tasks', 'samples', 'failures by class'];

export function formatTable(report: ScoreReport, run?: RunRecord): string {
  const body = rows(report);
  const widths = HEADER.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ');
  const out = [line(HEADER), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)];
  out.push('', describeScope(report));
  for (const note of report.notes) out.push(`note: ${note}`);
  if (run && run.spec.budgetUsd !== null) out.push(`spend: $${run.spentUsd.toFixed(4)} of $${run.spec.budgetUsd.toFixed(2)} budget`);
  return out.join('\n') + '\n';
}

export function formatMarkdown(report: ScoreReport): string {
  const esc = (s: string) => s.replace(/\|/g, '\\|');
  const out = [`| ${HEADER.join(' | ')} |`, `|${HEADER.map(() => '---').join('|')}|`];
  for (const r of rows(report)) out.push(`| ${r.map(esc).join(' | ')} |`);
  out.push('', `_${describeScope(report)}_`);
  for (const note of report.notes) out.push('', `**note:** ${esc(note)}`);
  for (const m of report.models) {
    out.push('', `### ${m.model}`, '', '| paper | scaled pass@1 % | pass@1 % | tasks | LoC |', '|---|---|---|---|---|');
    for (const p of m.papers) out.push(`| ${esc(p.paper)} | ${meanStd(p.scaled)} | ${meanStd(p.pass1)} | ${p.tasks} | ${p.loc} |`);
    if (m.samples > 1) out.push('', m.passAtK.map((k) => `pass@${k.k}: ${pct(k.tasks)}% (LoC-weighted ${pct(k.loc)}%)`).join('; '));
  }
  return out.join('\n') + '\n';
}

function csvCell(s: string): string {
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** One row per model and paper, plus an `ALL` row per model. */
export function formatCsv(report: ScoreReport): string {
  const header = ['judge', 'subset', 'model', 'paper', 'scaled_pass1_mean', 'scaled_pass1_std', 'pass1_mean', 'pass1_std', 'tasks', 'loc', 'samples', 'untested', 'env_broken'];
  const out = [header.join(',')];
  // untested and env_broken are the model's task samples, on its ALL row only.
  const row = (m: ModelScore, paper: string, s: { mean: number; std: number }, p: { mean: number; std: number }, tasks: number, loc: number) =>
    [report.judge, report.subset, m.model, paper, pct(s.mean), pct(s.std), pct(p.mean), pct(p.std), String(tasks), String(loc), String(m.samples), ...(paper === 'ALL' ? [String(m.pending), String(m.envBroken)] : ['', ''])]
      .map(csvCell)
      .join(',');
  for (const m of report.models) {
    out.push(row(m, 'ALL', m.scaled, m.pass1, m.tasks, m.loc));
    for (const p of m.papers) out.push(row(m, p.paper, p.scaled, p.pass1, p.tasks, p.loc));
  }
  return out.join('\n') + '\n';
}

export function formatJson(report: ScoreReport, run: RunRecord): string {
  return (
    JSON.stringify(
      {
        run: { runId: run.runId, status: run.status, source: run.source, spec: run.spec, spentUsd: run.spentUsd },
        scope: describeScope(report),
        ...report,
      },
      null,
      2,
    ) + '\n'
  );
}
