/**
 * Every output of a run agrees with every other, figure for figure and count for count:
 * `rcb report` in each format (table, JSON, CSV, Markdown, official, HTML), `rcb runs`,
 * `rcb show`, `rcb compare` and `rcb cloud results`. The runs are written through the real
 * SQLite store as `rcb run` writes them, with an env_broken paper (its environment check
 * failed), untested task samples and three samples per task. Each output is parsed and its
 * numbers compared with the JSON report's, rounded as printed; nothing is compared as a string.
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteRunStore } from '../../adapters/local/sqlite-store';
import { aggregateRun } from '../../core/cloud/aggregate-run';
import { readRunResults } from '../../core/cloud/run-results';
import { buildReport } from '../../core/report/build-report';
import { seededRandom } from '../../core/report/bootstrap';
import type { ReportFormat } from '../../core/report/format';
import type { RunRecord, TaskRecord } from '../../core/records';
import type { Judge } from '../../core/types';
import { writeRunId } from '../../bin/commands/common';
import { listRuns, runsCommand } from '../../bin/commands/runs-command';
import { showCommand } from '../../bin/commands/show-command';
import { compareCommand } from '../../bin/commands/compare-command';
import { makeCompletion, makeRun, makeVerdict } from '../aws/records';
import { MemoryBlobStore } from '../cloud/memory-blob-store';

const MODELS = ['alpha', 'beta'];
const PAPERS = ['p1', 'p2', 'p3', 'broken'];
const SAMPLES = 3;

/** A run as `rcb run` leaves it: tasks, answers, verdicts (some missing), its environment check. */
async function writeRun(dir: string, runId: string, seed: number): Promise<{ tasks: TaskRecord[]; untested: number }> {
  const random = seededRandom(seed);
  mkdirSync(dir, { recursive: true });
  const store = new SqliteRunStore(join(dir, 'rcb.sqlite'));
  const base = makeRun(runId);
  const run: RunRecord = {
    ...base,
    spec: { ...base.spec, models: MODELS.map((id) => ({ id, params: {} })), samples: SAMPLES, papers: PAPERS },
    papers: PAPERS.map((id) => ({ id, annotated_file_paths: ['model.py'], context_file_paths: [], extra: {}, first_commit_date: '2025-01-10' })),
    models: Object.fromEntries(MODELS.map((id) => [id, { config: {} }])),
  };
  await store.createRun(run);
  const tasks: TaskRecord[] = [];
  for (const paper of PAPERS) {
    for (let s = 0; s < 2 + (paper.length % 4); s++) {
      const loc = 1 + Math.floor(random() * 12);
      for (const model of MODELS)
        for (let sample = 0; sample < SAMPLES; sample++) {
          tasks.push({ taskId: `${runId}-${paper}-${s}-${model}-${sample}`, paper, file: 'model.py', snippet: `snippet ${s}`, loc, model, sample });
        }
    }
  }
  await store.putTasks(runId, tasks);
  let untested = 0;
  for (const t of tasks) {
    if (t.paper === 'broken') continue; // never generated nor tested
    // p2's last snippet is left untested in sample 2 (an interrupted run), for every model.
    if (t.paper === 'p2' && t.snippet === 'snippet 1' && t.sample === 2) {
      untested++;
      continue;
    }
    await store.putCompletion({ ...makeCompletion(t.taskId), model: t.model });
    const official = random() < (t.model === 'alpha' ? 0.7 : 0.45);
    // Now and then the strict judge fails what the official rule passes (an integrity flag).
    const strict = official && random() < 0.85;
    await store.putVerdict(
      runId,
      makeVerdict(t.taskId, { officialPass: official, strictPass: strict, failureClass: official ? null : 'functional', exitCode: official ? 0 : 1 }),
    );
  }
  await store.setRunEnvironment(runId, {
    python: '/usr/bin/python3',
    papers: PAPERS.map((paper) => ({ paper, runs: paper !== 'broken', reason: paper === 'broken' ? 'missing module timm' : null })),
    checkedAt: '2026-12-01T08:00:00.000Z',
  });
  await store.setRunStatus(runId, 'succeeded');
  await store.close();
  writeRunId(dir, runId);
  return { tasks, untested };
}

const r2 = (x: number) => Math.round(x * 100) / 100;
const num = (s: string) => Number(s);
/** Every decimal number of a text, in order. */
const numbers = (s: string) => (s.match(/-?\d+(?:\.\d+)?/g) ?? []).map(Number);

interface Figures {
  /** model -> name -> value */
  [model: string]: Record<string, number>;
}

/** The headline figures of a model from the four cells that print them: scaled ± std, its interval, pass@1 ± std, its interval. */
function headline(scaledCell: string, scaledCi: string, pass1Cell: string, pass1Ci: string): Record<string, number> {
  const [scaled, scaledStd] = numbers(scaledCell);
  const [scaledLow, scaledHigh] = numbers(scaledCi);
  const [pass1, pass1Std] = numbers(pass1Cell);
  const [pass1Low, pass1High] = numbers(pass1Ci);
  return { scaled, scaledStd, scaledLow, scaledHigh, pass1, pass1Std, pass1Low, pass1High };
}

/** The reference: the JSON report's figures, rounded as the text formats print them. */
function fromJson(text: string): { figures: Figures; envBroken: Record<string, number>; json: any } {
  const json = JSON.parse(text);
  const figures: Figures = {};
  for (const m of json.models) {
    const f: Record<string, number> = {
      scaled: r2(m.scaled.mean),
      scaledStd: r2(m.scaled.std),
      scaledLow: r2(m.scaled.ci.low),
      scaledHigh: r2(m.scaled.ci.high),
      pass1: r2(m.pass1.mean),
      pass1Std: r2(m.pass1.std),
      pass1Low: r2(m.pass1.ci.low),
      pass1High: r2(m.pass1.ci.high),
      tasks: m.tasks,
      samples: m.samples,
      untested: m.pending,
      envBroken: m.envBroken,
      loc: m.loc,
    };
    for (const k of m.passAtK)
      Object.assign(f, {
        [`pass@${k.k}`]: r2(k.tasks),
        [`pass@${k.k}Low`]: r2(k.tasksCi.low),
        [`pass@${k.k}High`]: r2(k.tasksCi.high),
        [`pass@${k.k}Loc`]: r2(k.loc),
      });
    for (const p of m.papers)
      Object.assign(f, {
        [`${p.paper}.scaled`]: r2(p.scaled.mean),
        [`${p.paper}.low`]: r2(p.scaled.ci.low),
        [`${p.paper}.high`]: r2(p.scaled.ci.high),
        [`${p.paper}.tasks`]: p.tasks,
      });
    figures[m.model] = f;
  }
  const envBroken = Object.fromEntries(json.envBroken.map((p: any) => [p.paper, p.taskSamples]));
  return { figures, envBroken, json };
}

function fromTable(text: string): { figures: Figures; envBroken: Record<string, number> } {
  const figures: Figures = {};
  const lines = text.split('\n');
  for (const m of MODELS) {
    const row = lines.find((l) => l.startsWith(`${m} `))!;
    const [scaled, scaledStd, scaledLow, scaledHigh, pass1, pass1Std, pass1Low, pass1High, tasks, samples] = numbers(row.slice(m.length));
    const f: Record<string, number> = { scaled, scaledStd, scaledLow, scaledHigh, pass1, pass1Std, pass1Low, pass1High, tasks, samples };
    const pending = /\(pending (\d+)\)/.exec(row);
    f.untested = pending ? num(pending[1]) : 0;
    const k = lines.find((l) => l.startsWith(`${m}: pass@1:`))!;
    for (const [, kk, v, lo, hi, loc] of k.matchAll(/pass@(\d+): ([\d.]+)% \[([\d.]+), ([\d.]+)\] \(LoC-weighted ([\d.]+)%/g)) {
      Object.assign(f, { [`pass@${kk}`]: num(v), [`pass@${kk}Low`]: num(lo), [`pass@${kk}High`]: num(hi), [`pass@${kk}Loc`]: num(loc) });
    }
    figures[m] = f;
  }
  // Per paper: "paper  model  mean ± std  [low, high]  tasks  LoC", the paper named on its first row.
  const start = lines.indexOf('per paper:');
  let paper = '';
  for (const l of lines.slice(start + 3)) {
    if (!l.trim()) break;
    const cells = l.split(/\s{2,}/);
    if (l[0] !== ' ') paper = cells.shift()!;
    else cells.shift();
    const [model, ...rest] = cells;
    const [mean, , low, high, tasks] = numbers(rest.join(' '));
    Object.assign(figures[model], { [`${paper}.scaled`]: mean, [`${paper}.low`]: low, [`${paper}.high`]: high, [`${paper}.tasks`]: tasks });
  }
  const envBroken: Record<string, number> = {};
  const eb = lines.indexOf('env_broken (cannot run here, not scored):');
  for (const l of lines.slice(eb + 3)) {
    if (!l.trim()) break;
    const [p, n] = l.split(/\s{2,}/);
    envBroken[p] = num(n);
  }
  const note = lines.find((l) => l.startsWith('note: env_broken:'))!;
  envBroken.total = numbers(note)[0];
  return { figures, envBroken };
}

function fromCsv(text: string): { figures: Figures; envBroken: Record<string, number> } {
  const [header, ...rows] = text
    .trim()
    .split('\n')
    .map((l) => l.match(/("[^"]*"|[^,]*)(,|$)/g)!.map((c) => c.replace(/,$/, '')));
  const col = (r: string[], name: string) => r[header.indexOf(name)];
  const figures: Figures = {};
  const envBroken: Record<string, number> = {};
  for (const r of rows) {
    const model = col(r, 'model');
    const paper = col(r, 'paper');
    const f = (figures[model] ??= {});
    if (paper === 'ALL') {
      Object.assign(f, {
        scaled: num(col(r, 'scaled_pass1_mean')),
        scaledStd: num(col(r, 'scaled_pass1_std')),
        scaledLow: num(col(r, 'scaled_pass1_ci_low')),
        scaledHigh: num(col(r, 'scaled_pass1_ci_high')),
        pass1: num(col(r, 'pass1_mean')),
        pass1Std: num(col(r, 'pass1_std')),
        pass1Low: num(col(r, 'pass1_ci_low')),
        pass1High: num(col(r, 'pass1_ci_high')),
        tasks: num(col(r, 'tasks')),
        samples: num(col(r, 'samples')),
        untested: num(col(r, 'untested')),
        envBroken: num(col(r, 'env_broken')),
        loc: num(col(r, 'loc')),
      });
    } else if (col(r, 'scaled_pass1_mean') === '') {
      // An env_broken paper: no score cells, its task samples counted.
      expect(col(r, 'tasks')).toBe('0');
      envBroken[paper] = (envBroken[paper] ?? 0) + num(col(r, 'env_broken'));
    } else {
      Object.assign(f, {
        [`${paper}.scaled`]: num(col(r, 'scaled_pass1_mean')),
        [`${paper}.low`]: num(col(r, 'scaled_pass1_ci_low')),
        [`${paper}.high`]: num(col(r, 'scaled_pass1_ci_high')),
        [`${paper}.tasks`]: num(col(r, 'tasks')),
      });
    }
  }
  return { figures, envBroken };
}

function fromMarkdown(text: string): { figures: Figures; envBroken: Record<string, number> } {
  const lines = text.split('\n');
  const cells = (l: string) => l.split(' | ').map((c) => c.replace(/^\| ?|\s?\|$/g, '').trim());
  const figures: Figures = {};
  for (const m of MODELS) {
    const c = cells(lines.find((l) => l.startsWith(`| ${m} |`))!);
    const pending = /\(pending (\d+)\)/.exec(c[7]);
    const f: Record<string, number> = {
      ...headline(c[1], c[2], c[3], c[4]),
      tasks: num(c[5]),
      samples: num(c[6]),
      untested: pending ? num(pending[1]) : 0,
    };
    const section = lines.indexOf(`### ${m}`);
    for (const l of lines.slice(section + 4)) {
      if (!l.startsWith('| ')) break;
      const p = cells(l);
      const [mean] = numbers(p[1]);
      const [low, high] = numbers(p[2]);
      Object.assign(f, { [`${p[0]}.scaled`]: mean, [`${p[0]}.low`]: low, [`${p[0]}.high`]: high, [`${p[0]}.tasks`]: num(p[5]) });
    }
    const k = lines.slice(section).find((l) => l.startsWith('pass@1:'))!;
    for (const [, kk, v, lo, hi, loc] of k.matchAll(/pass@(\d+): ([\d.]+)% \[([\d.]+), ([\d.]+)\] \(LoC-weighted ([\d.]+)%/g)) {
      Object.assign(f, { [`pass@${kk}`]: num(v), [`pass@${kk}Low`]: num(lo), [`pass@${kk}High`]: num(hi), [`pass@${kk}Loc`]: num(loc) });
    }
    figures[m] = f;
  }
  const envBroken: Record<string, number> = {};
  const eb = lines.indexOf('### env_broken (cannot run here, not scored)');
  for (const l of lines.slice(eb + 4)) {
    if (!l.startsWith('| ')) break;
    const c = cells(l);
    envBroken[c[0]] = num(c[1]);
  }
  return { figures, envBroken };
}

function fromHtml(text: string): { figures: Figures; envBroken: Record<string, number>; heatmap: Record<string, Record<string, string>> } {
  const figures: Figures = {};
  for (const [, model, row] of text.matchAll(/<tr class="model-row" data-model="([^"]+)">(.*?)<\/tr>/g)) {
    const cell = (metric: string) => new RegExp(`data-metric="${metric}">(.*?)</td>`).exec(row)![1];
    const f: Record<string, number> = {
      ...headline(cell('scaled'), cell('scaled-ci'), cell('pass1'), cell('pass1-ci')),
      tasks: num(cell('tasks')),
      samples: num(cell('samples')),
      untested: num(cell('untested')),
      envBroken: num(cell('env-broken')),
    };
    for (const [, kk, v, lo, hi] of cell('pass-at-k').matchAll(/pass@(\d+) ([\d.]+) \[([\d.]+), ([\d.]+)\]/g)) {
      Object.assign(f, { [`pass@${kk}`]: num(v), [`pass@${kk}Low`]: num(lo), [`pass@${kk}High`]: num(hi) });
    }
    figures[model] = f;
  }
  const heatmap: Record<string, Record<string, string>> = {};
  for (const [, row, col, value, title] of text.matchAll(
    /<rect class="cell" data-row="([^"]+)" data-col="([^"]+)" data-value="([^"]*)"[^>]*><title>([^<]*)<\/title>/g,
  )) {
    (heatmap[row] ??= {})[col] = value;
    if (value !== '') {
      const [mean, low, high, tasks] = numbers(title.slice(title.indexOf(':') + 1));
      Object.assign(figures[row], { [`${col}.scaled`]: mean, [`${col}.low`]: low, [`${col}.high`]: high, [`${col}.tasks`]: tasks });
    }
  }
  const envBroken: Record<string, number> = {};
  for (const [, paper, n] of text.matchAll(/<span class="env-broken" data-paper="([^"]+)" data-task-samples="(\d+)">/g)) envBroken[paper] = num(n);
  return { figures, envBroken, heatmap };
}

/** What a command writes to stdout and stderr, run in-process. */
async function capture(run: () => Promise<number>): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const out = jest.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => ((stdout += String(s)), true));
  const err = jest.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => ((stderr += String(s)), true));
  try {
    return { code: await run(), stdout, stderr };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

describe('every output of a run agrees on every figure and count', () => {
  const root = mkdtempSync(join(tmpdir(), 'rcb-agree-'));
  const dirA = join(root, 'run-a');
  const dirB = join(root, 'run-b');
  let written: { tasks: TaskRecord[]; untested: number };
  let compared = 0;

  beforeAll(async () => {
    written = await writeRun(dirA, 'run-a', 1);
    await writeRun(dirB, 'run-b', 2);
  });

  afterAll(() => {
    // Reported in the closing note: the size of this test.
    console.log(
      `report agreement: ${written.tasks.length} task samples per run (${MODELS.length} models x ${PAPERS.length} papers, 1 env_broken, ${written.untested} untested, ${SAMPLES} samples), ${compared} figures compared across the outputs`,
    );
  });

  /** Every figure of `got` equals the reference's; the figures a format has are all compared. */
  const agree = (what: string, got: Figures, want: Figures) => {
    for (const model of MODELS) {
      const keys = Object.keys(got[model] ?? {});
      expect(keys.length).toBeGreaterThan(5);
      for (const k of keys) {
        compared++;
        expect([what, model, k, got[model][k]]).toEqual([what, model, k, want[model][k]]);
      }
    }
  };

  it.each<Judge>(['strict', 'official'])('report formats under the %s judge: table, CSV, Markdown, HTML and official agree with JSON', async (judge) => {
    // Act
    const store = new SqliteRunStore(join(dirA, 'rcb.sqlite'));
    const text = async (format: ReportFormat) => (await buildReport(store, 'run-a', { format, judge, subset: 'all' })).text;
    const [json, table, csv, markdown, html, official] = [
      await text('json'),
      await text('table'),
      await text('csv'),
      await text('markdown'),
      await text('html'),
      await text('official'),
    ];
    await store.close();

    // Assess: the reference is sane (env_broken out, untested counted).
    const ref = fromJson(json);
    expect(ref.envBroken).toEqual({ broken: written.tasks.filter((t) => t.paper === 'broken').length });
    for (const m of MODELS) {
      expect(ref.figures[m].envBroken).toBe(ref.envBroken.broken / MODELS.length);
      expect(ref.figures[m].untested).toBe(written.untested / MODELS.length);
      expect(ref.json.models.find((x: any) => x.model === m).paperIds).toEqual(['p1', 'p2', 'p3']);
    }
    // Under the official judge the untested task is out of the denominator; under strict it counts.
    const p2Tasks = (m: string) => ref.figures[m]['p2.tasks'];
    expect(p2Tasks('alpha')).toBe(judge === 'official' ? 3 : 4);

    const t = fromTable(table);
    agree('table', t.figures, ref.figures);
    expect(t.envBroken).toEqual({ ...ref.envBroken, total: ref.envBroken.broken });

    const c = fromCsv(csv);
    agree('csv', c.figures, ref.figures);
    expect(c.envBroken).toEqual(ref.envBroken);

    const md = fromMarkdown(markdown);
    agree('markdown', md.figures, ref.figures);
    expect(md.envBroken).toEqual(ref.envBroken);

    const h = fromHtml(html);
    agree('html', h.figures, ref.figures);
    expect(h.envBroken).toEqual(ref.envBroken);
    // The env_broken paper is an empty heatmap cell, never a 0.
    for (const m of MODELS) expect(h.heatmap[m].broken).toBe('');

    // overall_stats.json: the means, spreads and per-sample rates, and the paper absent from results.
    const o = JSON.parse(official);
    expect(Object.keys(o.results).sort()).toEqual(['p1', 'p2', 'p3']);
    for (const m of ref.json.models) {
      compared += 4;
      expect(o.overall_scores[m.model].line_rates).toEqual({ mean: m.scaled.mean, std: m.scaled.std, rates: m.scaled.rates });
      expect(o.overall_scores[m.model].task_rates).toEqual({ mean: m.pass1.mean, std: m.pass1.std, rates: m.pass1.rates });
      for (const p of m.papers) expect(o.results[p.paper].problem_scores[m.model]).toEqual({ mean: p.scaled.mean, std: p.scaled.std });
      const samples = Object.keys(o.results).flatMap((p) => Object.values(o.results[p].results[m.model].results as Record<string, unknown[]>).flat());
      expect(samples).toHaveLength(m.tasks * SAMPLES);
    }
    expect(o.rcb_notes.some((n: string) => n.startsWith('env_broken:'))).toBe(true);
  });

  it('rcb runs, rcb show and rcb compare print the same figures and counts as the report', async () => {
    const store = new SqliteRunStore(join(dirA, 'rcb.sqlite'));
    const ref = fromJson((await buildReport(store, 'run-a', { format: 'json', subset: 'all' })).text);
    await store.close();
    const runnable = written.tasks.filter((t) => t.paper !== 'broken');

    // rcb runs: the listing and its text.
    const listing = (await listRuns(root)).find((r) => r.runId === 'run-a')!;
    expect(listing.tasks).toBe(runnable.length);
    expect(listing.judged).toBe(runnable.length - written.untested);
    expect(listing.envBroken).toBe(ref.envBroken.broken);
    const runsText = (await capture(() => runsCommand(root, {}))).stdout;
    const block = runsText.slice(runsText.indexOf('run run-a'));
    const judged = /judged (\d+)\/(\d+); env_broken (\d+)/.exec(block)!;
    expect(judged.slice(1).map(Number)).toEqual([listing.judged, listing.tasks, listing.envBroken]);
    for (const m of MODELS) {
      const [score, low, high] = numbers(new RegExp(`${m} ([\\d.]+ \\[[\\d.]+, [\\d.]+\\])`).exec(block)![1]);
      compared += 3;
      expect([score, low, high]).toEqual([ref.figures[m].scaled, ref.figures[m].scaledLow, ref.figures[m].scaledHigh]);
    }

    // rcb show: its counts are the score's (strict judge, the default).
    const show = await capture(() => showCommand(dirA, {}));
    const [shown, failed, passedCount] = numbers(show.stderr);
    const untested = Number(/(\d+) untested/.exec(show.stderr)![1]);
    const envBroken = Number(/(\d+) env_broken/.exec(show.stderr)![1]);
    const json = ref.json.models as any[];
    const failures = json.reduce((a, m) => a + Object.values(m.failures as Record<string, number>).reduce((x, y) => x + y, 0), 0);
    compared += 5;
    expect([shown, failed, untested, envBroken]).toEqual([written.tasks.length, failures, written.untested, ref.envBroken.broken]);
    expect(passedCount).toBe(runnable.length - written.untested - failures);
    const failedOnly = await capture(() => showCommand(dirA, { failed: true }));
    expect(numbers(failedOnly.stderr).slice(0, 2)).toEqual([failures, failures]);

    // rcb compare: a run with itself differs by 0; each side's own report is the table's figure.
    const self = JSON.parse((await capture(() => compareCommand(dirA, dirA, { json: true }))).stdout);
    for (const m of self.models) {
      compared += 4;
      expect([m.difference, m.ci.low, m.ci.high]).toEqual([0, 0, 0]);
      expect([r2(m.reportA.scaled), m.reportA.tasks]).toEqual([ref.figures[m.model].scaled, ref.figures[m.model].tasks]);
      expect(r2(m.scaledA)).toBe(ref.figures[m.model].scaled);
    }
    expect(self.envBrokenA).toEqual(['broken']);
    const ab = (await capture(() => compareCommand(dirA, dirB, {}))).stdout;
    for (const m of MODELS) {
      const own = new RegExp(`${m}: \\d+ task\\(s\\) in both[\\s\\S]*?own reports: A ([\\d.]+) over (\\d+) task\\(s\\)`).exec(ab)!;
      compared += 2;
      expect([num(own[1]), num(own[2])]).toEqual([ref.figures[m].scaled, ref.figures[m].tasks]);
    }
  });

  it('rcb cloud results serves the same figures, stored by Aggregate or built from the table', async () => {
    const store = new SqliteRunStore(join(dirA, 'rcb.sqlite'));
    const blobs = new MemoryBlobStore();
    const ref = fromJson((await buildReport(store, 'run-a', { format: 'json', subset: 'all' })).text);
    const built = await readRunResults({ store, blobs }, 'run-a', { format: 'table', subset: 'all' });
    // Aggregate stores the reports. The run was cancelled with 2 task samples untested: those
    // are what it misses, not the env_broken paper's tasks, which are never tested.
    // A cancelled run is partial: its stored reports are over its judged tasks only (core/report/partial-run.ts).
    await store.setRunStatus('run-a', 'cancelled');
    const partialRef = fromJson((await buildReport(store, 'run-a', { format: 'json', subset: 'all' })).text);
    const aggregated = await aggregateRun({ store, blobs }, 'run-a');
    await store.setRunStatus('run-a', 'succeeded');
    expect(aggregated.status).toBe('cancelled');
    const stored = await readRunResults({ store, blobs }, 'run-a', { format: 'csv', subset: 'all' });
    const storedJson = await readRunResults({ store, blobs }, 'run-a', { format: 'json', subset: 'all' });
    await store.close();
    agree('cloud table', fromTable(built!.text).figures, ref.figures);
    agree('cloud csv', fromCsv(stored!.text).figures, partialRef.figures);
    agree('cloud json', fromJson(storedJson!.text).figures, partialRef.figures);
    expect(JSON.parse(storedJson!.text).partial).toEqual({ status: 'cancelled', judged: expect.any(Number), pending: 2 });
    expect(blobs.objects.size).toBeGreaterThanOrEqual(5);
  });
});
