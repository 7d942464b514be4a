/**
 * Report formats: a leaderboard table, markdown, CSV and JSON. Every format says which
 * judge and which subset its scores use (SPEC 7, 9).
 */
import type { FailureClass } from '../types';
import { cheatSummary } from '../judge';
import type { RunRecord } from '../records';
import type { MeanStd, ModelScore, ScoreReport } from '../scoring';
import type { ConfidenceInterval } from './bootstrap';
import { unknownCutoffNote } from '../contamination';
import { PARTIAL_CSV_COLUMNS, partialCsvCells, partialNote } from './partial-run';
import { ESTIMATE_CSV_COLUMNS, ESTIMATE_HEADER, estimateCsvCells, estimateJson, estimateRows, type SubsetEstimates } from './subset-estimate';
import { BASELINE_CSV_COLUMNS, BASELINE_HEADER, baselineCell, baselineCsvCells, baselineJson, type Baseline } from './baseline';
import { COST_CSV_COLUMNS, COST_HEADER, COST_TITLE, costCsvCells, costJson, costRows, type RunCost } from './run-cost';
import { csvCell, markdownText } from '../util/output-cells';
import { oneLineText } from '../util/terminal-text';

export type ReportFormat = 'table' | 'json' | 'csv' | 'markdown' | 'official' | 'html';
export const REPORT_FORMATS: ReportFormat[] = ['table', 'json', 'csv', 'markdown', 'official', 'html'];

const pct = (x: number) => x.toFixed(2);
const NA = 'n/a';

/** The mean, with the spread over samples only where there are several (one sample has none). */
export function scoreCell(m: MeanStd, tasks: number, samples: number): string {
  if (!tasks) return NA;
  return samples > 1 ? `${pct(m.mean)} ± ${pct(m.std)}` : pct(m.mean);
}

export function intervalCell(ci: ConfidenceInterval | null): string {
  return ci ? `[${pct(ci.low)}, ${pct(ci.high)}]` : NA;
}

export function failureSummary(failures: Partial<Record<FailureClass, number>>): string {
  const parts = Object.entries(failures)
    .filter(([, n]) => n)
    .sort(([, a], [, b]) => b! - a!)
    .map(([cls, n]) => `${cls} ${n}`);
  return parts.length ? parts.join(', ') : '-';
}

export function describeScope(report: ScoreReport): string {
  const judge =
    report.judge === 'strict' ? 'strict judge (tests must demonstrably run to the end; integrity flags fail)' : 'official judge (original harness rule)';
  const subset =
    report.subset === 'all'
      ? 'all papers'
      : report.subset === 'safe-common'
        ? `contamination-safe papers, ${commonCutoffLabel(report)}`
        : 'contamination-safe papers, each model at its own cutoff';
  return `scores use the ${judge}; subset: ${subset}`;
}

/** safe-common's cutoff as a reader needs it: the month, or why there is none. */
export function commonCutoffLabel(report: ScoreReport): string {
  if (report.commonCutoff) return `common cutoff ${report.commonCutoff} (the latest among the run's models)`;
  const unknown = report.models.find((m) => m.cutoffUnknown.length)?.cutoffUnknown;
  if (unknown) return `common cutoff unknown (cutoff unknown for ${unknown.join(', ')})`;
  return 'no trained model to guard against, every paper counts';
}

/** Where the intervals come from, and what ± means: said once under every table. */
export function describeIntervals(report: ScoreReport): string {
  const several = report.models.some((m) => m.samples > 1);
  return `[low, high]: ${report.interval}${several ? '; ± is the population standard deviation over samples' : ''}`;
}

/**
 * Why a model has no score in a contamination-safe subset: no paper of the run was first
 * committed after its cutoff (with the public set, whose newest paper is from 2025-04, that
 * is every recent model).
 */
export function emptySubsetNotes(report: ScoreReport, run?: RunRecord): string[] {
  if (report.subset === 'all') return [];
  const dates = (run?.papers ?? [])
    .map((p) => p.first_commit_date)
    .filter((d): d is string => !!d)
    .sort();
  const newest = dates.length ? `; the newest paper of the run was first committed on ${dates[dates.length - 1]}` : '';
  return report.models
    .filter((m) => m.tasks === 0)
    .map((m) =>
      m.cutoffUnknown.length
        ? unknownCutoffNote(m.model, m.cutoffUnknown)
        : `${m.model}: n/a, no paper was first committed after its cutoff ${m.cutoff ?? '(unknown)'}${newest}`,
    );
}

/** A model's infra_error task samples and their rate: `12 (3.10%)`. */
export function infraErrorCell(m: ModelScore): string {
  return `${m.infraError} (${pct(m.infraErrorRate)}%)`;
}

/** Whether the report has infra_error tasks: only then do the table and markdown show their column. */
const withInfraErrors = (report: ScoreReport) => report.infraError.taskSamples > 0;

function rows(report: ScoreReport, baseline?: Baseline): string[][] {
  return report.models.map((m) => [
    m.model,
    scoreCell(m.scaled, m.tasks, m.samples),
    intervalCell(m.scaled.ci),
    // --baseline: the published score beside rcb's.
    ...(baseline ? [baselineCell(baseline, m.model)] : []),
    scoreCell(m.pass1, m.tasks, m.samples),
    intervalCell(m.pass1.ci),
    String(m.tasks),
    String(m.samples),
    ...(withInfraErrors(report) ? [infraErrorCell(m)] : []),
    failureSummary(m.failures) + (m.pending ? ` (pending ${m.pending})` : ''),
  ]);
}

const HEADER = ['model', 'scaled pass@1 %', '95% CI', 'pass@1 %', '95% CI', 'tasks', 'samples', 'failures by class'];
/** The header, with the infra_error column (task samples out of the score, and their rate) when there are some. */
function headerOf(report: ScoreReport, baseline?: Baseline): string[] {
  const head = baseline ? [...HEADER.slice(0, 3), BASELINE_HEADER, ...HEADER.slice(3)] : HEADER;
  return withInfraErrors(report) ? [...head.slice(0, -1), 'infra_error (rate)', head[head.length - 1]] : head;
}

/** Columns padded to their widest cell; the last one is left ragged. */
function alignedTable(header: string[], raw: string[][]): string[] {
  // Escaped before measuring, so a name with control characters keeps its column aligned.
  const body = raw.map((r) => r.map(oneLineText));
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)];
}

/** Per paper, each model's scaled pass@1 and its interval: the rows a leaderboard reader looks for next. */
function paperRows(report: ScoreReport): string[][] {
  const papers = [...new Set(report.models.flatMap((m) => m.papers.map((p) => p.paper)))].sort();
  const body: string[][] = [];
  for (const paper of papers) {
    let first = true;
    for (const m of report.models) {
      const p = m.papers.find((q) => q.paper === paper);
      if (!p) continue;
      body.push([first ? paper : '', m.model, scoreCell(p.scaled, p.tasks, m.samples), intervalCell(p.scaled.ci), String(p.tasks), String(p.loc)]);
      first = false;
    }
  }
  return body;
}

/** The env_broken papers, listed apart: they have no score, and are never drawn as 0%. */
export function envBrokenRows(report: ScoreReport): string[][] {
  return report.envBroken.map((p) => [p.paper, String(p.taskSamples), p.reason ?? 'its oracle fails here']);
}

export function formatTable(report: ScoreReport, run?: RunRecord, estimates?: SubsetEstimates, cost?: RunCost, baseline?: Baseline): string {
  // A partial run's scores are headed by what they rest on, not only noted under them.
  const out = [...(report.partial ? [`PARTIAL: ${partialNote(report.partial)}`, ''] : []), ...alignedTable(headerOf(report, baseline), rows(report, baseline))];
  if (baseline) out.push(`published: ${baseline.label}`);
  if (estimates)
    out.push(
      '',
      'estimated full-set scaled pass@1 (ESTIMATE, from the subset):',
      ...alignedTable(
        ESTIMATE_HEADER,
        estimateRows(
          estimates,
          report.models.map((m) => m.model),
        ),
      ),
      `estimate: ${estimates.label}`,
    );
  const notes = emptySubsetNotes(report, run);
  if (notes.length) out.push('', ...notes);
  const perPaper = paperRows(report);
  if (perPaper.length) out.push('', 'per paper:', ...alignedTable(['paper', 'model', 'scaled pass@1 %', '95% CI', 'tasks', 'LoC'], perPaper));
  if (report.envBroken.length)
    out.push('', 'env_broken (cannot run here, not scored):', ...alignedTable(['paper', 'task samples', 'reason'], envBrokenRows(report)));
  for (const m of report.models) {
    if (m.samples > 1) out.push('', `${m.model}: ${passAtKLine(m)}`);
  }
  const cheats = cheatRows(report);
  if (cheats.length) out.push('', `${CHEATS_TITLE}:`, ...alignedTable(['model', 'cheats'], cheats));
  out.push('', describeScope(report), describeIntervals(report));
  for (const note of report.notes) out.push(`note: ${note}`);
  if (run && run.spec.budgetUsd !== null) out.push(`spend: $${run.spentUsd.toFixed(4)} of $${run.spec.budgetUsd.toFixed(2)} budget`);
  if (cost) out.push('', `${COST_TITLE}:`, ...alignedTable(COST_HEADER, costRows(cost)), `infrastructure: ${cost.basis}`);
  return `${out.join('\n')}\n`;
}

/** The heading of the caught cheats' list (docs/security.md, "Verdicts an answer cannot forge"). */
export const CHEATS_TITLE = 'cheats caught (pass the original rule, fail the strict judge), by class';

/** One row per model with caught cheats: model, then its classes and counts. */
export function cheatRows(report: ScoreReport): string[][] {
  return report.models.filter((m) => Object.keys(m.cheats ?? {}).length).map((m) => [m.model, cheatSummary(m.cheats)]);
}

/** pass@k for every k, with the unbiased estimator and its interval. */
export function passAtKLine(m: ModelScore): string {
  return m.passAtK.map((k) => `pass@${k.k}: ${pct(k.tasks)}% ${intervalCell(k.tasksCi)} (LoC-weighted ${pct(k.loc)}% ${intervalCell(k.locCi)})`).join('; ');
}

export function formatMarkdown(report: ScoreReport, run?: RunRecord, estimates?: SubsetEstimates, cost?: RunCost, baseline?: Baseline): string {
  const esc = markdownText;
  const header = headerOf(report, baseline);
  const out = [
    ...(report.partial ? [`**PARTIAL:** ${esc(partialNote(report.partial))}`, ''] : []),
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
  ];
  for (const r of rows(report, baseline)) out.push(`| ${r.map(esc).join(' | ')} |`);
  if (baseline) out.push('', `_published: ${esc(baseline.label)}_`);
  if (estimates) {
    out.push(
      '',
      '### Estimated full-set scaled pass@1 (estimate)',
      '',
      `| ${ESTIMATE_HEADER.join(' | ')} |`,
      `|${ESTIMATE_HEADER.map(() => '---').join('|')}|`,
    );
    for (const r of estimateRows(
      estimates,
      report.models.map((m) => m.model),
    ))
      out.push(`| ${r.map(esc).join(' | ')} |`);
    out.push('', `_${esc(estimates.label)}_`);
  }
  const cheats = cheatRows(report);
  if (cheats.length) {
    out.push('', `### ${CHEATS_TITLE}`, '', '| model | cheats |', '|---|---|');
    for (const r of cheats) out.push(`| ${r.map(esc).join(' | ')} |`);
  }
  out.push('', `_${describeScope(report)}_`, '', `_${describeIntervals(report)}_`);
  for (const note of emptySubsetNotes(report, run)) out.push('', `- ${esc(note)}`);
  for (const note of report.notes) out.push('', `**note:** ${esc(note)}`);
  if (cost) {
    out.push('', '### Cost', '', `| ${COST_HEADER.join(' | ')} |`, `|${COST_HEADER.map(() => '---').join('|')}|`);
    for (const r of costRows(cost)) out.push(`| ${r.map(esc).join(' | ')} |`);
    out.push('', `_${esc(COST_TITLE)}; infrastructure: ${esc(cost.basis)}_`);
  }
  if (report.envBroken.length) {
    out.push('', '### env_broken (cannot run here, not scored)', '', '| paper | task samples | reason |', '|---|---|---|');
    for (const r of envBrokenRows(report)) out.push(`| ${r.map(esc).join(' | ')} |`);
  }
  for (const m of report.models) {
    if (!m.tasks) continue;
    out.push('', `### ${esc(m.model)}`, '', '| paper | scaled pass@1 % | 95% CI | pass@1 % | 95% CI | tasks | LoC |', '|---|---|---|---|---|---|---|');
    for (const p of m.papers) {
      const cells = [scoreCell(p.scaled, p.tasks, m.samples), intervalCell(p.scaled.ci), scoreCell(p.pass1, p.tasks, m.samples), intervalCell(p.pass1.ci)];
      out.push(`| ${esc(p.paper)} | ${cells.join(' | ')} | ${p.tasks} | ${p.loc} |`);
    }
    if (m.samples > 1) out.push('', `${passAtKLine(m)} (unbiased estimator)`);
  }
  return `${out.join('\n')}\n`;
}

/**
 * One row per model and paper, plus an `ALL` row per model. The interval columns come last
 * (columns added, none moved); a scope with no task has empty score cells, not zeros.
 */
export function formatCsv(report: ScoreReport, estimates?: SubsetEstimates, cost?: RunCost, baseline?: Baseline): string {
  const header = [
    'judge',
    'subset',
    'model',
    'paper',
    'scaled_pass1_mean',
    'scaled_pass1_std',
    'pass1_mean',
    'pass1_std',
    'tasks',
    'loc',
    'samples',
    'scaled_pass1_ci_low',
    'scaled_pass1_ci_high',
    'pass1_ci_low',
    'pass1_ci_high',
    'interval_method',
    'untested',
    'env_broken',
    'flaky',
    // infra_error task samples (their shard failed every attempt: out of the score) and their rate, percent.
    'infra_error',
    'infra_error_rate',
    // Caught cheats by class (`forged_check 2, reference_access 1`, or -), on each model's ALL row.
    'cheats_caught',
    // Only with a subset's estimate: its columns come last, on each model's ALL row.
    ...(estimates ? ESTIMATE_CSV_COLUMNS : []),
    // The run's cost (core/report/run-cost.ts), on each model's ALL row, after everything else.
    ...(cost ? COST_CSV_COLUMNS : []),
    // --baseline: the published score of the same model and paper, last.
    ...(baseline ? BASELINE_CSV_COLUMNS : []),
    ...(report.partial ? PARTIAL_CSV_COLUMNS : []),
  ];
  const out = [header.join(',')];
  const num = (x: number, tasks: number) => (tasks ? pct(x) : '');
  const ci = (c: ConfidenceInterval | null) => (c ? [pct(c.low), pct(c.high)] : ['', '']);
  // untested, env_broken and flaky (flaky_reference verdicts) are the model's task samples, on its ALL row (env_broken on its papers' rows too).
  const row = (m: ModelScore, paper: string, s: MeanStd, p: MeanStd, tasks: number, loc: number) =>
    [
      report.judge,
      report.subset,
      m.model,
      paper,
      num(s.mean, tasks),
      num(s.std, tasks),
      num(p.mean, tasks),
      num(p.std, tasks),
      String(tasks),
      String(loc),
      String(m.samples),
      ...ci(s.ci),
      ...ci(p.ci),
      report.interval,
      ...(paper === 'ALL' ? [String(m.pending), String(m.envBroken), String(m.flaky), String(m.infraError), pct(m.infraErrorRate)] : ['', '', '', '', '']),
      paper === 'ALL' ? cheatSummary(m.cheats ?? {}) : '',
      ...(estimates ? (paper === 'ALL' ? estimateCsvCells(estimates, m.model) : ESTIMATE_CSV_COLUMNS.map(() => '')) : []),
      ...(cost ? (paper === 'ALL' ? costCsvCells(cost, m.model) : COST_CSV_COLUMNS.map(() => '')) : []),
      ...(baseline ? baselineCsvCells(baseline, m.model, paper) : []),
      ...partialCsvCells(report.partial),
    ]
      .map(csvCell)
      .join(',');
  for (const m of report.models) {
    out.push(row(m, 'ALL', m.scaled, m.pass1, m.tasks, m.loc));
    for (const p of m.papers) out.push(row(m, p.paper, p.scaled, p.pass1, p.tasks, p.loc));
    // An env_broken paper: no score cells (not 0), its task samples in env_broken.
    for (const [paper, n] of Object.entries(m.envBrokenByPaper).sort(([a], [b]) => a.localeCompare(b))) {
      out.push(
        [
          ...[
            report.judge,
            report.subset,
            m.model,
            paper,
            '',
            '',
            '',
            '',
            '0',
            '0',
            String(m.samples),
            '',
            '',
            '',
            '',
            report.interval,
            '',
            String(n),
            '',
            '',
            '',
            '',
          ],
          ...(estimates ? ESTIMATE_CSV_COLUMNS.map(() => '') : []),
          ...(cost ? COST_CSV_COLUMNS.map(() => '') : []),
          ...(baseline ? baselineCsvCells(baseline, m.model, paper) : []),
          ...partialCsvCells(report.partial),
        ]
          .map(csvCell)
          .join(','),
      );
    }
  }
  return `${out.join('\n')}\n`;
}

export function formatJson(report: ScoreReport, run: RunRecord, estimates?: SubsetEstimates, cost?: RunCost, baseline?: Baseline): string {
  // A subset run's spec keeps the whole subset file; the report names it (the file has the rest).
  const { subset: runSubset, ...spec } = run.spec;
  return `${JSON.stringify(
    {
      run: {
        runId: run.runId,
        status: report.partial?.status ?? run.status,
        source: run.source,
        spec: runSubset ? { ...spec, subset: { sha256: runSubset.sha256, source: runSubset.source, size: runSubset.file.size } } : spec,
        spentUsd: run.spentUsd,
      },
      scope: describeScope(report),
      ...report,
      ...(estimates ? { estimatedFull: estimateJson(estimates) } : {}),
      ...(cost ? { cost: costJson(cost) } : {}),
      ...(baseline ? { baseline: { label: baseline.label, interval: baseline.report.interval } } : {}),
      // The scored tasks themselves stay out of the file: it holds the figures.
      models: report.models.map(({ outcomes: _outcomes, ...m }) => {
        const e = estimates?.models.get(m.model);
        const withEstimate = e ? { ...m, estimatedFull: e } : m;
        return baseline ? { ...withEstimate, published: baselineJson(baseline, m.model) } : withEstimate;
      }),
      // The score's own notes (untested, env_broken) and those of empty subsets.
      notes: [...report.notes, ...emptySubsetNotes(report, run)],
    },
    null,
    2,
  )}\n`;
}
