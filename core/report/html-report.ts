/**
 * `rcb report RUN_DIR... --format html`: one self-contained page (no network, no CDN, no
 * external file) that a reader opens on a laptop or prints: the leaderboard with its
 * intervals, a model x paper heatmap, pass rate against snippet length, failure classes,
 * the contamination-safe subsets, cost and tokens, and every task's prompt, answer,
 * spliced diff and test log.
 *
 * Everything the page shows from a run (answers, logs, prompts, even model and paper
 * names) is model- or author-written text and is escaped; on top of that the page's
 * content policy admits no script but its own (by hash) and no request at all, so even a
 * slip in escaping could not run code or reach the network.
 */
import { createHash } from 'node:crypto';
import { cheatSummary } from '../judge';
import type { FailureClass, Judge } from '../types';
import type { ModelScore, ScoreReport, Subset } from '../scoring';
import { scoreStoredRun } from '../scoring';
import type { ShownStatus } from './partial-run';
import { commonCutoffLabel, describeScope, emptySubsetNotes } from './format';
import type { LoadedRun } from './loaded-run';
import type { TaskSources } from './task-detail';
import { promptPrefixes, taskDetails } from './task-detail';
import { INTERVAL_METHOD } from './bootstrap';
import { categoryLineChart, escapeXml as esc, heatmap, intervalBarChart, MAX_LINES, PALETTE, scatterChart, stackedBarChart } from './svg-charts';
import { displayName } from './display-name';
import { publishedModel } from './baseline';
import { LOC_BINS, lengthBins } from './length-bins';
import { docLink } from './doc-links';
import { byName, cutPrefix, dataBlock, dataClasses, EXPLORE_SCRIPT, exploreData, filterBar } from './explore';
import { ESTIMATE_HEADER, estimateRows, type SubsetEstimates } from './subset-estimate';
import { costRow, solvedLines, usd4, type CostRow } from './run-cost';
import { priceRecordedInfra, type InfraCost } from '../cost/recorded-infra';

export interface HtmlRunInput {
  /** How the reader knows the run (its directory, or its id in the cloud). */
  label: string;
  loaded: LoadedRun;
  sources: TaskSources;
  /** Each model's estimated full-set score from a subset (core/report/subset-estimate.ts), if any. */
  estimate?: SubsetEstimates;
  /** The run's infrastructure cost (core/cost/recorded-infra.ts). @default a local run's ($0), none for imported results */
  infra?: InfraCost;
  /** The run already scored (core/report/build-report.ts's cache): used when of the page's judge and subset, not scored again. */
  scored?: ScoreReport;
  /** The status to show when the caller knows more than the store (`interrupted`: core/report/partial-run.ts). */
  shownStatus?: ShownStatus;
}

/** The run's infrastructure cost as the page shows it: a local run's when none is given, none for imported results. */
function infraOf(r: HtmlRunInput): InfraCost | undefined {
  return r.loaded.run.source === 'import' ? undefined : (r.infra ?? priceRecordedInfra({ where: 'local' }));
}

export interface HtmlReportOptions {
  /** One judge for every run; defaults to strict, or official when a run was imported. */
  judge?: Judge;
  /** The subset of the leaderboard, heatmap and charts; the subsets table shows all three. */
  subset?: Subset;
  /** Stamp printed in the header (tests pass a fixed one). */
  now?: Date;
  /** Published scores to show beside the run's (`--baseline`: an overall_stats.json or an imported run). */
  baseline?: HtmlBaseline;
}

/** Published scores, scored under the official rule (all the original harness records). */
export interface HtmlBaseline {
  /** Where they come from (the file or run directory given). */
  label: string;
  report: ScoreReport;
}

export { LOG_TAIL_CHARS } from './explore';

const pct = (x: number) => x.toFixed(2);
const FAILURE_COLORS: Partial<Record<FailureClass, string>> = {
  functional: '#0072B2',
  syntax: '#E69F00',
  name: '#009E73',
  type: '#CC79A7',
  attribute: '#56B4E9',
  index_key: '#D55E00',
  import: '#F0E442',
  runtime: '#7f3c8d',
  timeout: '#555555',
  resource: '#999999',
  no_code: '#bbbbbb',
  generation_error: '#e15759',
  integrity: '#000000',
  unknown: '#dddddd',
};

/** One model of one run: the unit of every table and chart. */
interface Entry {
  /** The model id, or `model @ run` when two runs hold the same model. */
  name: string;
  /** The name the reader knows (core/report/display-name.ts), with the same ` @ run` suffix. */
  display: string;
  color: string;
  run: HtmlRunInput;
  score: ModelScore;
  /** The published score of the same model, when a baseline is given and names it. */
  published: ModelScore | null;
}

const CSS = `
:root{--fg:#1b1b1b;--muted:#666;--line:#e3e3e3;--pass:#1a7f37;--fail:#c62828}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);margin:0 auto;max-width:1600px;padding:16px 24px 48px}
.scroll{overflow-x:auto;max-width:100%}
#task-matrix,#task-list{max-height:85vh;overflow-y:auto}
details.paper-group,details.fold{margin:2px 0}details.paper-group>summary,details.fold>summary{cursor:pointer;padding:3px 0}
.muted.id{font-size:11.5px}
th.sort{cursor:pointer;user-select:none}th.sort[aria-sort=ascending]::after{content:" \\25B2";font-size:9px}th.sort[aria-sort=descending]::after{content:" \\25BC";font-size:9px}
a.go{cursor:pointer}table.matrix td.mx{cursor:pointer;font-size:12px;padding:1px 4px}
td.mx.pass{background:#dff3e4}td.mx.fail{background:#fbe4e4}td.mx.part{background:#fff4cc}td.mx.untested{background:#f3f3f3}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(320px,1fr));gap:8px}.card{border:1px solid var(--line);border-radius:6px;padding:6px}.card pre{max-height:260px}
.filters select,.filters input{font:inherit}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}
.muted,.note{color:var(--muted)}.note{font-size:12.5px}
table{border-collapse:collapse;margin:6px 0;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid var(--line);padding:3px 10px 3px 0;text-align:left;vertical-align:top}
th{font-weight:600;font-size:12.5px;color:#333}
td.num,th.num{text-align:right;padding-left:10px;white-space:nowrap}
td.name{white-space:nowrap}
.chart{max-width:100%;height:auto;display:block;margin:6px 0 2px}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px;vertical-align:baseline}
.legend span{margin-right:14px;font-size:12.5px;white-space:nowrap}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(520px,100%),1fr));gap:8px 28px}.grid>section{min-width:0}
details.task{border:1px solid var(--line);border-radius:6px;margin:4px 0;padding:0 10px}
details.task>summary{cursor:pointer;padding:5px 0;list-style-position:inside}
details.task[open]>summary{border-bottom:1px solid var(--line);margin-bottom:6px}
.badge{display:inline-block;min-width:38px;text-align:center;border-radius:4px;color:#fff;font-size:12px;padding:0 5px;margin-right:6px}
.badge.pass{background:var(--pass)}.badge.fail{background:var(--fail)}.badge.untested{background:#888}.badge.env_broken{background:#b08800}
pre{background:#f6f8fa;border:1px solid var(--line);border-radius:4px;padding:8px;overflow:auto;max-height:420px;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:pre}
pre.diff .add{background:#e6ffec;display:block}pre.diff .del{background:#ffebe9;display:block}pre.diff .hunk{color:#6f42c1;display:block}
.filters{position:sticky;top:0;background:#fff;padding:6px 0;border-bottom:1px solid var(--line);z-index:1}
.filters label{margin-right:14px}
nav a{margin-right:12px}
@media print{
  body{max-width:none;padding:0;font-size:11px}
  .filters,nav{display:none}
  h2{break-after:avoid}section{break-inside:avoid-page}
  pre{max-height:none;white-space:pre-wrap}
  #task-matrix,#task-list{max-height:none;overflow:visible}
  details.task{break-inside:avoid}
}`;

/** The model as a table shows it: the name the reader knows, and the id `--model` takes beside it. */
function nameHtml(e: Entry): string {
  return e.display === e.name ? esc(e.name) : `${esc(e.display)} <span class="muted id">${esc(e.name)}</span>`;
}

/** The model in a tooltip: its name and, when that differs, its id. */
const titled = (e: Entry) => (e.display === e.name ? e.name : `${e.display} (${e.name})`);

function cspHash(script: string): string {
  return `'sha256-${createHash('sha256').update(script).digest('base64')}'`;
}

const ci = (c: { low: number; high: number } | null) => (c ? `[${pct(c.low)}, ${pct(c.high)}]` : 'n/a');

function scoreCells(m: ModelScore, which: 'scaled' | 'pass1'): string {
  const s = m[which];
  if (!m.tasks) return `<td class="num" data-metric="${which}">n/a</td><td class="num" data-metric="${which}-ci">n/a</td>`;
  const spread = m.samples > 1 ? ` <span class="muted">± ${pct(s.std)}</span>` : '';
  return `<td class="num" data-metric="${which}">${pct(s.mean)}${spread}</td><td class="num" data-metric="${which}-ci">${ci(s.ci)}</td>`;
}

function failureText(f: ModelScore['failures']): string {
  const parts = Object.entries(f)
    .filter(([, n]) => n)
    .sort(([, a], [, b]) => b! - a!);
  return parts.length ? parts.map(([k, n]) => `${esc(k)} ${n}`).join(', ') : '–';
}

/** A published score in one cell: mean [interval], or why there is none. */
function publishedCell(m: ModelScore | null, metric: string): string {
  if (!m || !m.tasks) return `<td class="num" data-metric="${metric}" data-v="-1">${m ? 'n/a' : '–'}</td>`;
  return `<td class="num" data-metric="${metric}" data-v="${m.scaled.mean.toFixed(4)}">${pct(m.scaled.mean)} <span class="muted">${ci(m.scaled.ci)}</span></td>`;
}

/** Tables sit in a scroller: a wide one scrolls, it is never clipped. */
const scroll = (html: string) => `<div class="scroll">${html}</div>`;

function leaderboard(entries: Entry[], baseline: HtmlBaseline | undefined): string {
  const withK = entries.some((e) => e.score.samples > 1);
  // infra_error task samples (their cloud shard failed every attempt): out of the score, shown with their rate.
  const withInfra = entries.some((e) => e.score.infraError > 0);
  const rows = entries.map((e, i) => {
    const k = withK
      ? `<td class="num" data-metric="pass-at-k">${e.score.passAtK.map((p) => `pass@${p.k} ${pct(p.tasks)} ${ci(p.tasksCi)}`).join('<br>')}</td>`
      : '';
    return (
      `<tr class="model-row" data-model="${esc(e.name)}"><td class="num">${i + 1}</td><td class="name"><span class="swatch" style="background:${e.color}"></span>${nameHtml(e)}</td>` +
      scoreCells(e.score, 'scaled') +
      scoreCells(e.score, 'pass1') +
      k +
      (baseline ? publishedCell(e.published, 'published') : '') +
      `<td class="num" data-metric="tasks">${e.score.tasks}</td><td class="num" data-metric="samples">${e.score.samples}</td><td class="num" data-metric="untested">${e.score.pending}</td><td class="num" data-metric="env-broken">${e.score.envBroken}</td>` +
      (withInfra
        ? `<td class="num" data-metric="infra-error" data-rate="${pct(e.score.infraErrorRate)}">${e.score.infraError} (${pct(e.score.infraErrorRate)}%)</td>`
        : '') +
      `<td>${failureText(e.score.failures)}</td><td data-metric="cheats">${esc(cheatSummary(e.score.cheats ?? {}))}</td></tr>`
    );
  });
  const head =
    '<tr><th class="num">#</th><th>model</th><th class="num">scaled pass@1 %</th><th class="num">95% CI</th><th class="num">pass@1 %</th><th class="num">95% CI</th>' +
    (withK ? '<th class="num">pass@k % (unbiased) [95% CI]</th>' : '') +
    (baseline ? '<th class="num">published scaled pass@1 % [95% CI]</th>' : '') +
    '<th class="num">tasks</th><th class="num">samples</th><th class="num">untested</th><th class="num">env_broken</th>' +
    (withInfra ? '<th class="num">infra_error (rate)</th>' : '') +
    '<th>failures by class</th><th title="pass the original rule, fail the strict judge (docs/security.md)">cheats caught</th></tr>';
  const chart = intervalBarChart(
    'leaderboard-chart',
    'scaled pass@1 per model with 95% bootstrap intervals',
    entries.map((e) => ({
      label: e.name,
      display: e.display,
      value: e.score.tasks ? e.score.scaled.mean : null,
      low: e.score.scaled.ci?.low ?? null,
      high: e.score.scaled.ci?.high ?? null,
      color: e.color,
      title: `${titled(e)}: scaled pass@1 ${pct(e.score.scaled.mean)}% ${ci(e.score.scaled.ci)} over ${e.score.tasks} task(s)`,
    })),
  );
  return `${scroll(`<table id="leaderboard" class="sortable"><thead>${head}</thead><tbody>${rows.join('')}</tbody></table>`)}${chart}${baseline ? publishedTable(entries, baseline) : ''}`;
}

/** Every model of the published results, with the run's score of the same model beside it. */
function publishedTable(entries: Entry[], baseline: HtmlBaseline): string {
  const mine = new Map(entries.filter((e) => e.published).map((e) => [e.published!.model, e]));
  const rows = baseline.report.models
    .map((m) => {
      const e = mine.get(m.model);
      const delta = e && e.score.tasks && m.tasks ? e.score.scaled.mean - m.scaled.mean : null;
      return (
        `<tr data-model="${esc(m.model)}"><td class="name">${esc(m.model)}</td>${publishedCell(m, 'published')}<td class="num" data-v="${m.pass1.mean.toFixed(4)}">${m.tasks ? pct(m.pass1.mean) : 'n/a'}</td><td class="num">${m.tasks}</td>` +
        `<td>${e ? nameHtml(e) : '<span class="muted">not in this page</span>'}</td>${e ? publishedCell(e.score, 'mine') : '<td class="num" data-v="-1">–</td>'}` +
        `<td class="num" data-v="${delta === null ? '' : delta.toFixed(4)}">${delta === null ? '–' : `${delta >= 0 ? '+' : ''}${pct(delta)}`}</td></tr>`
      );
    })
    .join('');
  return (
    `<h3>Published scores</h3><p class="note">From ${esc(baseline.label)}, scored by rcb under the official rule (all the original harness records), over the papers it holds; ${esc(baseline.report.interval)}.</p>` +
    scroll(
      `<table id="published" class="sortable"><thead><tr><th>published model</th><th class="num">scaled pass@1 % [95% CI]</th><th class="num">pass@1 %</th><th class="num">tasks</th><th>model here</th><th class="num">here: scaled pass@1 % [95% CI]</th><th class="num">here - published</th></tr></thead><tbody>${rows}</tbody></table>`,
    )
  );
}

/** The score's own notes (untested and env_broken tasks, how they are treated), per run. */
function scoreNotes(inputs: HtmlRunInput[], reports: ScoreReport[]): string {
  const items = reports.flatMap((r, i) => r.notes.map((n) => `<li class="score-note">${inputs.length > 1 ? `${esc(inputs[i].label)}: ` : ''}${esc(n)}</li>`));
  return items.length ? `<ul class="note" id="score-notes">${items.join('')}</ul>` : '';
}

function paperHeatmap(entries: Entry[], reports: ScoreReport[]): string {
  const broken = new Map(reports.flatMap((r) => r.envBroken.map((p) => [p.paper, p.reason ?? 'its oracle fails here'] as const)));
  const papers = [...new Set([...entries.flatMap((e) => e.score.papers.map((p) => p.paper)), ...broken.keys()])].sort(byName);
  if (!papers.length) return '<p class="note">no paper in scope</p>';
  return heatmap(
    'paper-heatmap',
    'scaled pass@1 per model and paper',
    entries.map((e) => e.name),
    papers,
    (i, j) => {
      const p = entries[i].score.papers.find((q) => q.paper === papers[j]);
      const n = entries[i].score.envBrokenByPaper[papers[j]];
      // An env_broken paper has no score: an empty cell that says why, never a 0%.
      if (!p && n)
        return {
          value: null,
          title: `${titled(entries[i])} / ${papers[j]}: env_broken, cannot run here (${broken.get(papers[j])}); ${n} task sample(s) not scored`,
        };
      if (!p) return { value: null, title: `${titled(entries[i])} / ${papers[j]}: not in the run` };
      return {
        value: p.scaled.mean,
        title: `${titled(entries[i])} / ${papers[j]}: ${pct(p.scaled.mean)}% ${ci(p.scaled.ci)}, ${p.tasks} task(s), ${p.loc} LoC; click for its tasks`,
        go: { model: entries[i].name, paper: papers[j] },
      };
    },
    entries.map((e) => e.display),
  );
}

/** Above this many models a long table is folded: grouped by paper, each group closed until clicked. */
const FOLD_MODELS = 4;

/** Per paper and model: the score with its interval in plain view, and the published one beside it; one fold per paper. */
function paperTable(entries: Entry[], baseline: HtmlBaseline | undefined): string {
  const byPaper = new Map<string, { mean: number; html: string }[]>();
  for (const e of entries) {
    for (const p of e.score.papers) {
      const pub = e.published?.papers.find((q) => q.paper === p.paper) ?? null;
      const list = byPaper.get(p.paper) ?? byPaper.set(p.paper, []).get(p.paper)!;
      list.push({
        mean: p.scaled.mean,
        html:
          `<tr data-model="${esc(e.name)}" data-paper="${esc(p.paper)}"><td>${esc(p.paper)}</td><td class="name">${nameHtml(e)}</td>` +
          `<td class="num" data-metric="scaled">${pct(p.scaled.mean)}</td><td class="num" data-metric="scaled-ci" data-v="${p.scaled.ci ? p.scaled.ci.low.toFixed(4) : '-1'}">${ci(p.scaled.ci)}</td>` +
          `<td class="num">${pct(p.pass1.mean)}</td><td class="num">${p.tasks}</td><td class="num">${p.loc}</td>` +
          (baseline
            ? `<td class="num" data-metric="published" data-v="${pub ? pub.scaled.mean.toFixed(4) : '-1'}">${pub ? `${pct(pub.scaled.mean)} <span class="muted">${ci(pub.scaled.ci)}</span>` : '–'}</td>`
            : '') +
          `<td><a class="go" href="#s-tasks" data-go="" data-f-model="${esc(e.name)}" data-f-paper="${esc(p.paper)}">tasks</a></td></tr>`,
      });
    }
  }
  const head = `<tr><th>paper</th><th>model</th><th class="num">scaled pass@1 %</th><th class="num">95% CI</th><th class="num">pass@1 %</th><th class="num">tasks</th><th class="num">LoC</th>${baseline ? '<th class="num">published scaled pass@1 % [95% CI]</th>' : ''}<th></th></tr>`;
  const open = entries.length <= FOLD_MODELS ? ' open' : '';
  // Within a paper, the leaderboard's order.
  const groups = [...byPaper.keys()].sort(byName).map((paper) => {
    const rows = byPaper.get(paper)!;
    const means = rows.map((r) => r.mean).sort((x, y) => x - y);
    const median = (means[Math.floor((means.length - 1) / 2)] + means[Math.ceil((means.length - 1) / 2)]) / 2;
    const summary = `<b>${esc(paper)}</b> <span class="muted">${rows.length} model(s); best ${pct(means.at(-1)!)}%, median ${pct(median)}%</span>`;
    return `<details class="paper-group" data-paper="${esc(paper)}"${open}><summary>${summary}</summary>${scroll(`<table class="sortable"><thead>${head}</thead><tbody>${rows.map((r) => r.html).join('')}</tbody></table>`)}</details>`;
  });
  return `<div id="paper-table">${groups.join('')}</div>`;
}

/** Pass rate (task-weighted, over samples) of each snippet-length bin, per model. */
function lengthChart(entries: Entry[], judge: Judge): string {
  const used = new Set<number>();
  const stats = entries.map((e) => lengthBins(e.run.loaded, e.score.model, e.score.paperIds, judge, used));
  const cols = LOC_BINS.map((_, i) => i).filter((i) => used.has(i));
  if (!cols.length) return '<p class="note">no task in scope</p>';
  const chart = categoryLineChart(
    'length-chart',
    'pass rate against snippet length',
    cols.map((i) => LOC_BINS[i][2]),
    entries.map((e, k) => ({
      label: e.name,
      display: e.display,
      color: e.color,
      points: cols.map((i) => {
        const b = stats[k][i];
        return b.total ? { value: (100 * b.passed) / b.total, title: `${titled(e)}, ${LOC_BINS[i][2]} LoC: ${b.passed}/${b.total} task samples passed` } : null;
      }),
    })),
  );
  const head = `<thead><tr><th>model</th>${cols.map((i) => `<th class="num">${LOC_BINS[i][2]} LoC</th>`).join('')}</tr></thead>`;
  const rows = entries
    .map(
      (e, k) =>
        `<tr><td class="name">${nameHtml(e)}</td>${cols
          .map((i) => {
            const b = stats[k][i];
            return `<td class="num" data-v="${b.total ? ((100 * b.passed) / b.total).toFixed(4) : '-1'}">${b.total ? `${pct((100 * b.passed) / b.total)} <span class="muted">(${b.passed}/${b.total})</span>` : '–'}</td>`;
          })
          .join('')}</tr>`,
    )
    .join('');
  const table = scroll(`<table id="length-table" class="sortable">${head}<tbody>${rows}</tbody></table>`);
  const many = entries.length > MAX_LINES;
  const note = many ? '<p class="note">One panel per model, in the leaderboard\'s order.</p>' : '';
  return `${many ? '' : legend(entries)}${chart}${note}${fold(entries, 'the rates with their counts', table)}`;
}

/** A long table folded under a summary line when the page holds many models; in plain view otherwise. */
function fold(entries: Entry[], what: string, html: string): string {
  return entries.length <= FOLD_MODELS ? html : `<details class="fold"><summary>${esc(what)}, ${entries.length} models</summary>${html}</details>`;
}

/** The env_broken papers under the heatmap: their cells are empty, and this says why. */
function envBrokenNote(reports: ScoreReport[]): string {
  const papers = [...new Map(reports.flatMap((r) => r.envBroken.map((p) => [p.paper, p] as const))).values()];
  if (!papers.length) return '';
  return ` <span id="env-broken-papers">env_broken (cannot run here, not scored; an empty cell, not 0%): ${papers
    .map(
      (p) =>
        `<span class="env-broken" data-paper="${esc(p.paper)}" data-task-samples="${p.taskSamples}">${esc(p.paper)} (${esc(p.reason ?? 'its oracle fails here')}; ${p.taskSamples} task sample(s))</span>`,
    )
    .join(', ')}</span>`;
}

function legend(entries: Entry[]): string {
  return `<div class="legend">${entries.map((e) => `<span><span class="swatch" style="background:${e.color}"></span>${esc(e.display)}</span>`).join('')}</div>`;
}

function failureChart(entries: Entry[]): string {
  const classes = [...new Set(entries.flatMap((e) => Object.keys(e.score.failures) as FailureClass[]))].filter((c) => entries.some((e) => e.score.failures[c]));
  const color = (c: FailureClass, i: number) => FAILURE_COLORS[c] ?? PALETTE[i % PALETTE.length];
  const chart = stackedBarChart(
    'failure-chart',
    'failure classes per model',
    entries.map((e) => ({
      label: e.name,
      display: e.display,
      parts: classes.map((c, i) => ({ key: c, value: e.score.failures[c] ?? 0, color: color(c, i), go: { model: e.name, class: c } })),
    })),
  );
  const key = `<div class="legend">${classes.map((c, i) => `<span><span class="swatch" style="background:${color(c, i)}"></span>${esc(c)}</span>`).join('')}</div>`;
  return `${classes.length ? key : ''}${chart}<p class="note">Failed task samples under the judge, by class (the class is read from the test's output: ${docLink('spec-differences.md', 'judges-scores-and-subsets', 'how rcb classifies failures', esc)}); integrity: passes only the official rule. Click a bar's part for its tasks.</p>`;
}

function subsetsTable(inputs: HtmlRunInput[], entries: Entry[], judge: Judge, allReports: Map<HtmlRunInput, ScoreReport>): string {
  const reports = new Map<HtmlRunInput, Record<Subset, ScoreReport>>();
  for (const r of inputs) {
    const all = allReports.get(r) ?? scoreOf(r, judge, 'all');
    reports.set(r, { all, 'safe-common': scoreOf(r, judge, 'safe-common'), 'safe-per-model': scoreOf(r, judge, 'safe-per-model') });
  }
  const cell = (m: ModelScore | undefined) =>
    !m || !m.tasks ? '<td class="num">n/a</td>' : `<td class="num">${pct(m.scaled.mean)} ${ci(m.scaled.ci)} <span class="muted">${m.tasks} task(s)</span></td>`;
  const rows = entries.map((e) => {
    const r = reports.get(e.run)!;
    const of = (s: Subset) => r[s].models.find((m) => m.model === e.score.model);
    const cutoff = e.run.loaded.run.models[e.score.model]?.knowledgeCutoff ?? 'unknown';
    return `<tr><td class="name">${nameHtml(e)}</td><td>${esc(cutoff)}</td>${cell(of('all'))}${cell(of('safe-common'))}${cell(of('safe-per-model'))}</tr>`;
  });
  const notes = inputs.flatMap((r) => {
    const rep = reports.get(r)!;
    const common = `${esc(r.label)}: ${esc(commonCutoffLabel(rep['safe-common']))}`;
    return [common, ...emptySubsetNotes(rep['safe-per-model'], r.loaded.run).map(esc)];
  });
  return (
    scroll(
      `<table id="subsets" class="sortable"><thead><tr><th>model</th><th>knowledge cutoff</th><th class="num">all papers</th><th class="num">safe, common cutoff</th><th class="num">safe, own cutoff</th></tr></thead><tbody>${rows.join('')}</tbody></table>`,
    ) +
    `<p class="note">Scaled pass@1 % [95% CI]. A paper is safe for a model when its code was first committed after the first day of the model's cutoff month (${docLink('spec-differences.md', 'judges-scores-and-subsets', 'the subsets', esc)}); the common subset uses the latest cutoff among a run's models. ${notes.join('; ')}</p>`
  );
}

function costTable(entries: Entry[]): string {
  const rows = entries.map((e) => {
    let calls = 0;
    let cost = 0;
    let input = 0;
    let cached = 0;
    let output = 0;
    let reasoning = 0;
    let errors = 0;
    const latencies: number[] = [];
    for (const t of e.run.loaded.tasks) {
      if (t.model !== e.score.model) continue;
      const c = e.run.loaded.completions.get(t.taskId);
      if (!c) continue;
      calls++;
      cost += c.costUsd;
      input += c.usage.inputTokens;
      cached += c.usage.cachedInputTokens;
      output += c.usage.outputTokens;
      reasoning += c.usage.reasoningTokens;
      if (c.error) errors++;
      latencies.push(c.latencyMs);
    }
    latencies.sort((a, b) => a - b);
    const median = latencies.length ? latencies[Math.floor(latencies.length / 2)] : null;
    return { e, calls, cost, input, cached, output, reasoning, errors, median };
  });
  const money = (x: number) => `$${usd4(x)}`;
  const perLine = (c: CostRow) => (c.usdPerSolvedLine === null ? 'n/a' : money(c.usdPerSolvedLine));
  const costs = rows.map((r) => {
    const infra = infraOf(r.e.run);
    return { ...r, infra, c: costRow(r.e.score.model, r.cost, infra?.byModel[r.e.score.model] ?? 0, solvedLines(r.e.score.outcomes)) };
  });
  const infraCell = (infra: InfraCost | undefined, usd: number) => (infra === undefined ? '–' : infra.where === 'local' ? 'local ($0)' : money(usd));
  const body = costs
    .map(
      (r) =>
        `<tr data-model="${esc(r.e.name)}"><td class="name">${nameHtml(r.e)}</td><td class="num">${r.calls}</td><td class="num">${r.errors}</td><td class="num">${r.input}</td><td class="num">${r.cached}</td><td class="num">${r.output}</td><td class="num">${r.reasoning}</td><td class="num" data-metric="cost">$${r.cost.toFixed(4)}</td><td class="num" data-metric="infra">${infraCell(r.infra, r.c.infraUsd)}</td><td class="num" data-metric="total-cost">${money(r.c.totalUsd)}</td><td class="num" data-metric="solved-lines">${r.c.solvedLines}</td><td class="num" data-metric="usd-per-line">${perLine(r.c)}</td><td class="num">${r.median === null ? '–' : `${(r.median / 1000).toFixed(2)}s`}</td></tr>`,
    )
    .join('');
  // Per run: its total and what each of its infrastructure figures rests on.
  const runs = [...new Set(costs.map((r) => r.e.run))];
  const runRows = runs
    .map((run) => {
      const mine = costs.filter((r) => r.e.run === run);
      const infra = infraOf(run);
      const total = costRow(
        'ALL',
        mine.reduce((s, r) => s + r.cost, 0),
        infra?.totalUsd ?? 0,
        mine.reduce((s, r) => s + r.c.solvedLines, 0),
      );
      return `<tr class="run-cost" data-run="${esc(run.label)}"><td>${esc(run.label)}</td><td class="num" data-metric="cost">${money(total.modelUsd)}</td><td class="num" data-metric="infra">${infraCell(infra, total.infraUsd)}</td><td class="num" data-metric="total-cost">${money(total.totalUsd)}</td><td class="num" data-metric="solved-lines">${total.solvedLines}</td><td class="num" data-metric="usd-per-line">${perLine(total)}</td><td>${esc(infra?.basis ?? 'imported results: no spend recorded')}</td></tr>`;
    })
    .join('');
  const max = Math.max(0, ...rows.map((r) => r.cost));
  const chart =
    max > 0
      ? intervalBarChart(
          'cost-chart',
          'cost per model, as a share of the most expensive',
          rows.map((r) => ({
            label: r.e.name,
            display: r.e.display,
            value: (100 * r.cost) / max,
            low: null,
            high: null,
            color: r.e.color,
            title: `${titled(r.e)}: $${r.cost.toFixed(4)}`,
          })),
        )
      : '<p class="note">No model call cost anything (offline models, or answers reused from the cache).</p>';
  const scored = costs.filter((r) => r.e.score.tasks);
  // With a cloud run's infrastructure estimate, a point is the model's whole cost; else its model spend.
  const withInfra = scored.some((r) => r.infra?.where === 'cloud');
  const scatter = scored.length
    ? scatterChart(
        'cost-score-chart',
        withInfra
          ? 'scaled pass@1 against total cost (model spend and estimated infrastructure), one point per model'
          : 'scaled pass@1 against model spend, one point per model',
        withInfra ? 'total cost (USD) of the run: model spend + estimated infrastructure' : 'model spend (USD) of the run',
        scored.map((r) => ({
          label: r.e.name,
          display: r.e.display,
          x: withInfra ? r.c.totalUsd : r.cost,
          y: r.e.score.scaled.mean,
          low: r.e.score.scaled.ci?.low ?? null,
          high: r.e.score.scaled.ci?.high ?? null,
          color: r.e.color,
          title: withInfra
            ? `${titled(r.e)}: ${pct(r.e.score.scaled.mean)}% ${ci(r.e.score.scaled.ci)} for ${money(r.c.totalUsd)} (model calls ${money(r.cost)}, infrastructure ${money(r.c.infraUsd)})`
            : `${titled(r.e)}: ${pct(r.e.score.scaled.mean)}% ${ci(r.e.score.scaled.ci)} for $${r.cost.toFixed(4)} of model calls`,
        })),
      ) +
      (withInfra
        ? '<p class="note">Model spend is what the run recorded for its model calls; infrastructure is estimated from what the cloud run recorded (its shards, the durations of their tests, its generator invocations) at AWS list prices, each model carrying the Fargate time of its shards and its share of the rest.</p>'
        : '<p class="note">Model spend is what the run recorded for its model calls (answers reused from the cache cost nothing). The tests of a local run ran on this machine: no infrastructure cost is added.</p>')
    : '';
  return `${scroll(
    `<table id="costs" class="sortable"><thead><tr><th>model</th><th class="num">answers</th><th class="num">failed calls</th><th class="num">input tokens</th><th class="num">cached input</th><th class="num">output tokens</th><th class="num">reasoning</th><th class="num">cost</th><th class="num">infra (estimated)</th><th class="num">total</th><th class="num">lines solved</th><th class="num">$ per solved line</th><th class="num">median latency</th></tr></thead><tbody>${body}</tbody></table>`,
  )}${scroll(
    `<table id="run-costs"><thead><tr><th>run</th><th class="num">model spend</th><th class="num">infra (estimated)</th><th class="num">total</th><th class="num">lines solved</th><th class="num">$ per solved line</th><th>infrastructure</th></tr></thead><tbody>${runRows}</tbody></table>`,
  )}<p class="note">A solved line is a line of code of a passing task sample (the weight of scaled pass@1), under the page's judge and subset; the cost is the whole run's.</p>${chart}<h3>Score against cost</h3>${scatter}`;
}

/** The estimated full-set scores of the runs that have a subset's estimate, labelled an estimate. */
function estimateSection(inputs: HtmlRunInput[], entries: Entry[]): string {
  const withEstimate = inputs.filter((r) => r.estimate);
  if (!withEstimate.length) return '';
  const head = `<tr>${inputs.length > 1 ? '<th>run</th>' : ''}${ESTIMATE_HEADER.map((h, i) => `<th${i ? ' class="num"' : ''}>${esc(h)}</th>`).join('')}</tr>`;
  const rows = withEstimate.flatMap((r) =>
    estimateRows(
      r.estimate!,
      entries.filter((e) => e.run === r).map((e) => e.score.model),
    ).map(
      (cells) =>
        `<tr>${inputs.length > 1 ? `<td>${esc(r.label)}</td>` : ''}${cells.map((c, i) => `<td${i ? ' class="num"' : ''}>${esc(c)}</td>`).join('')}</tr>`,
    ),
  );
  const labels = withEstimate.map((r) => `<p class="note estimate-label">${inputs.length > 1 ? `${esc(r.label)}: ` : ''}${esc(r.estimate!.label)}</p>`);
  return `<section id="s-estimate"><h2>Estimated full-set scaled pass@1 (estimate)</h2><table id="estimate"><thead>${head}</thead><tbody>${rows.join('')}</tbody></table>${labels.join('')}</section>`;
}

function scoreOf(r: HtmlRunInput, judge: Judge, subset: Subset): ScoreReport {
  return scoreStoredRun(r.loaded.run, r.loaded.tasks, r.loaded.verdicts, judge, subset, r.loaded.infraErrors, r.shownStatus);
}

/**
 * Published results (an imported overall_stats.json) as the page's baseline, scored under
 * the official rule over the papers the page's runs hold (all its papers when none is shared).
 */
export function publishedBaseline(published: LoadedRun, label: string, papers: string[]): HtmlBaseline {
  const held = new Set(published.tasks.map((t) => t.paper));
  const shared = papers.filter((p) => held.has(p));
  const keep = new Set(shared.length ? shared : held);
  const tasks = published.tasks.filter((t) => keep.has(t.paper));
  const run = { ...published.run, papers: published.run.papers.filter((p) => keep.has(p.id)) };
  const scope = shared.length ? `its ${keep.size} paper(s) that the runs here also hold` : `all its ${keep.size} paper(s) (none is in the runs here)`;
  return { label: `${label}, over ${scope}`, report: scoreStoredRun(run, tasks, published.verdicts, 'official', 'all') };
}

export function buildHtmlReport(inputs: HtmlRunInput[], opts: HtmlReportOptions = {}): string {
  if (!inputs.length) throw new Error('no run to report');
  // Imported runs record only the original rule, so a page holding one scores every run by it.
  const judge: Judge = opts.judge ?? (inputs.some((r) => r.loaded.run.source === 'import') ? 'official' : 'strict');
  if (judge === 'strict') {
    const imported = inputs.find((r) => r.loaded.run.source === 'import');
    if (imported) throw new Error(`${imported.label} was imported from overall_stats.json, which records only the original pass rule: use --judge official`);
  }
  const subset = opts.subset ?? 'all';
  const reports = inputs.map((r) => (r.scored?.judge === judge && r.scored.subset === subset ? r.scored : scoreOf(r, judge, subset)));
  const counts = new Map<string, number>();
  for (const rep of reports) for (const m of rep.models) counts.set(m.model, (counts.get(m.model) ?? 0) + 1);
  const entries: Entry[] = [];
  reports.forEach((rep, i) =>
    rep.models.forEach((m) =>
      entries.push({
        name: counts.get(m.model)! > 1 ? `${m.model} @ ${inputs[i].label}` : m.model,
        display: `${displayName(m.model, inputs[i].loaded.run.models[m.model])}${counts.get(m.model)! > 1 ? ` @ ${inputs[i].label}` : ''}`,
        color: '',
        run: inputs[i],
        score: m,
        published: publishedModel(opts.baseline, m.model),
      }),
    ),
  );
  entries.sort((a, b) => b.score.scaled.mean - a.score.scaled.mean || a.name.localeCompare(b.name));
  // Beyond the palette, colours would repeat and mislead: one colour, the charts name each model.
  entries.forEach((e, i) => (e.color = entries.length > MAX_LINES ? PALETTE[0] : PALETTE[i % PALETTE.length]));

  const runRows = inputs
    .map((r) => {
      const run = r.loaded.run;
      const s = run.spec;
      return `<tr><td>${esc(r.label)}</td><td><code>${esc(run.runId)}</code></td><td>${esc(r.shownStatus ?? run.status)}</td><td>${esc(run.source === 'import' ? 'imported' : s.psetRoot)}</td><td class="num">${s.samples}</td><td>${s.withPaper ? 'with paper' : 'without paper'}</td><td><code>${esc(s.promptTemplateDigest.slice(0, 12) || '–')}</code></td><td class="num">$${run.spentUsd.toFixed(4)}${s.budgetUsd !== null ? ` of $${s.budgetUsd.toFixed(2)}` : ''}</td><td>${esc(run.createdAt.slice(0, 16).replace('T', ' '))}</td></tr>`;
    })
    .join('');

  const exploreRuns = inputs.map((r) => ({
    label: r.label,
    details: taskDetails(r.loaded, judge, r.sources),
    modelIndex: (model: string) => entries.findIndex((e) => e.run === r && e.score.model === model),
  }));
  // A task of a model outside the scores (none in scope) still lists, under its own id.
  const names = entries.map((e) => e.name);
  const ids = entries.map((e) => e.score.model);
  for (const [ri, r] of exploreRuns.entries()) {
    const extra = new Map<string, number>();
    const base = r.modelIndex;
    r.modelIndex = (model: string) => {
      const i = base(model);
      if (i >= 0) return i;
      if (!extra.has(model)) {
        ids.push(model);
        extra.set(model, names.push(inputs.length > 1 ? `${model} @ ${inputs[ri].label}` : model) - 1);
      }
      return extra.get(model)!;
    };
  }
  const data = exploreData(exploreRuns, names, judge, ids);
  const prefixList = inputs.flatMap((r, runIndex) => [...promptPrefixes(r.loaded.run, r.sources)].map(([paper, prefix]) => ({ r, runIndex, paper, prefix })));
  const prefixSections = prefixList
    .sort((a, b) => byName(a.paper, b.paper) || a.runIndex - b.runIndex)
    .map(({ r, runIndex, paper, prefix }) => {
      const kept = cutPrefix(prefix, prefixList.length);
      const cutNote = kept.cut
        ? `<p class="note cut">${kept.text.length} of ${prefix.length} characters shown; the whole with: rcb show ${esc(r.label)} --paper ${esc(paper)} --prompt</p>`
        : '';
      return `<details id="prefix-${runIndex}-${esc(paper)}" class="prefix"><summary>${esc(paper)}${inputs.length > 1 ? ` (${esc(r.label)})` : ''}: ${prefix.length} characters</summary>${cutNote}<pre>${esc(kept.text)}</pre></details>`;
    });

  const scope = describeScope(reports[0]);
  const stamp = (opts.now ?? new Date()).toISOString().slice(0, 16).replace('T', ' ');
  const papers = [...new Set(data.snippets.map((s) => s.paper))].sort(byName);
  const snippetNames = [...new Set(data.snippets.map((s) => s.snippet))].sort(byName);
  const classes = dataClasses(data).sort(byName);
  const csp = `default-src 'none'; style-src 'unsafe-inline'; script-src ${cspHash(EXPLORE_SCRIPT)}; img-src data:; base-uri 'none'; form-action 'none'`;
  const cutNote = data.cut
    ? '<p class="note" id="cut-note">This page keeps a part of each long answer, log and prompt to stay one small file; each cut names the <code>rcb show</code> command that prints it whole.</p>'
    : '';
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>rcb report: ${esc(inputs.map((r) => r.label).join(', '))}</title>
<style>${CSS}</style></head>
<body>
<h1>ResearchCodeBench results</h1>
<p class="muted">rcb report of ${inputs.length} run(s), made ${esc(stamp)} UTC. ${esc(scope)}. Intervals: ${esc(INTERVAL_METHOD)}.${opts.baseline ? ` Published scores from ${esc(opts.baseline.label)}.` : ''}</p>
<nav><a href="#s-leaderboard">leaderboard</a><a href="#s-papers">papers</a><a href="#s-length">snippet length</a><a href="#s-failures">failures</a><a href="#s-subsets">contamination-safe</a><a href="#s-cost">cost</a><a href="#s-matrix">side by side</a><a href="#s-tasks">tasks</a></nav>
${scroll(`<table id="runs"><tr><th>run</th><th>id</th><th>status</th><th>pset</th><th class="num">samples</th><th>paper</th><th>template</th><th class="num">spend</th><th>created</th></tr>${runRows}</table>`)}
<section id="s-leaderboard"><h2>Leaderboard</h2>${leaderboard(entries, opts.baseline)}${scoreNotes(inputs, reports)}
<p class="note">Scaled pass@1 weights each task by its lines of code (the benchmark's headline); pass@1 weights tasks equally. [low, high] is the 95% bootstrap interval${entries.some((e) => e.score.samples > 1) ? '; ± the standard deviation over samples' : ''}. Click a column's head to sort.</p></section>
${estimateSection(inputs, entries)}
<section id="s-papers"><h2>Per paper</h2>${paperHeatmap(entries, reports)}<p class="note">Scaled pass@1 % per model and paper; click a cell for its tasks.${envBrokenNote(reports)}</p></section>
<section id="s-paper-table"><h3>Per paper, with intervals</h3>${paperTable(entries, opts.baseline)}</section>
<section id="s-length"><h2>Pass rate against snippet length</h2>${lengthChart(entries, judge)}</section>
<section id="s-failures"><h2>Failure classes</h2>${failureChart(entries)}</section>
<section id="s-subsets"><h2>Contamination-safe subsets</h2>${subsetsTable(inputs, entries, judge, new Map(opts.subset && opts.subset !== 'all' ? [] : inputs.map((r, i) => [r, reports[i]])))}</section>
<section id="s-cost"><h2>Cost and tokens</h2>${costTable(entries)}</section>
<section id="s-matrix"><h2>Models side by side</h2><p class="note">Each snippet's passing samples per model under the ${judge} judge; click a cell for that task, a snippet for every model's answer side by side.</p><div class="scroll" id="task-matrix"></div></section>
<section id="s-tasks"><h2>Tasks</h2>${cutNote}
${filterBar(names, papers, snippetNames, classes, esc)}
<div id="side-by-side"></div>
<div id="task-list"></div><button type="button" id="task-more" hidden>list more</button>
${prefixSections.length ? `<h3>Prompt prefixes</h3><p class="note">Instructions and paper text, the same for every task of a paper.</p>${prefixSections.join('')}` : ''}
</section>
${dataBlock(data)}
<script>${EXPLORE_SCRIPT}</script>
</body></html>
`;
}
