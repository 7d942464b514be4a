/**
 * What a reader looks at after a run, as a user gets it: `rcb report --format html` opened
 * in headless Chromium (Debian's `chromium`, driven by puppeteer-core), `rcb show`,
 * `rcb compare` and `rcb runs`, on two real runs of the bundled example with replayed
 * answers whose outcomes are known: some right, some wrong in one sample of two, some
 * without code, and one right answer carrying markup that must stay text.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import type { Browser } from 'puppeteer-core';
import { loadPset } from '../../core/pset/read-pset';
import { originalBody } from '../../core/prompt/mask';
import { PSET_MINI, rcb, tempDir } from '../helpers/cli';
import { SqliteRunStore } from '../../adapters/local/sqlite-store';
import { buildReport } from '../../core/report/build-report';
import { svgTextOutside } from '../helpers/svg-boxes';

jest.setTimeout(300_000);

/** The browser's getComputedStyle, inside page callbacks (the project compiles without the DOM library). */
declare function getComputedStyle(e: unknown): { display: string };

const CHROMIUM = process.env.RCB_CHROMIUM ?? '/usr/bin/chromium';
const PAPERS = ['adamlite', 'smoothfocal'];
/** Model-written text that would run script if the page let it through as markup. */
const MARKUP = `# </pre><script>document.title="pwned"</script><img src=x onerror="document.title='pwned'">`;

type Outcome = 'right' | 'wrong' | 'none';
interface Plan {
  paper: string;
  snippet: string;
  file: string;
  loc: number;
  /** Outcome per sample. */
  samples: Outcome[];
  completions: string[];
}

/** Answers for each snippet of the two papers by its index: the pattern the assertions rely on. */
function plan(pattern: (i: number) => Outcome[]): Plan[] {
  const pset = loadPset(PSET_MINI, { papers: PAPERS });
  const out: Plan[] = [];
  let i = 0;
  for (const paper of pset.papers) {
    for (const s of paper.snippets) {
      const indent = ' '.repeat(s.bodyIndent);
      const samples = pattern(i);
      const completions = samples.map((o, sample) => {
        if (o === 'none') return 'I cannot write this block.';
        if (o === 'wrong') return `\`\`\`python\n${indent}return (\n\`\`\`\n`;
        const marked = i === 0 && sample === 0 ? `${indent}${MARKUP}\n` : '';
        return `\`\`\`python\n${marked}${originalBody(s)}\`\`\`\n`;
      });
      out.push({ paper: paper.meta.id, snippet: s.name, file: s.file, loc: s.loc, samples, completions });
      i++;
    }
  }
  return out;
}

function writeReplay(path: string, model: string, plans: Plan[]): void {
  const lines = plans.flatMap((p) =>
    p.completions.map((completion, sample) => JSON.stringify({ paper: p.paper, snippet: p.snippet, file: p.file, model, sample, completion })),
  );
  writeFileSync(path, `${lines.join('\n')}\n`);
}

// Run A: snippet i even passes both samples; i % 4 == 1 passes sample 0 only; i % 4 == 3 has no code.
const PLAN_A = plan((i) => (i % 2 === 0 ? ['right', 'right'] : i % 4 === 1 ? ['right', 'wrong'] : ['none', 'none']));
// Run B: the same, except snippet 0 now fails both samples and snippet 3 passes both.
const PLAN_B = plan((i) => (i === 0 ? ['wrong', 'wrong'] : i === 3 ? ['right', 'right'] : PLAN_A[i].samples));

const root = tempDir('rcb-results-');
const runsDir = join(root, 'runs');
const dirA = join(runsDir, 'a');
const dirB = join(runsDir, 'b');

interface JsonModel {
  model: string;
  tasks: number;
  samples: number;
  scaled: { mean: number; ci: { low: number; high: number } };
  pass1: { mean: number; ci: { low: number; high: number } };
}

beforeAll(() => {
  mkdirSync(runsDir, { recursive: true });
  writeReplay(join(root, 'a.jsonl'), 'mixed', PLAN_A);
  writeReplay(join(root, 'b.jsonl'), 'mixed', PLAN_B);
  const common = ['--samples', '2', '--papers', PAPERS.join(','), '--timeout', '20'];
  const a = rcb(['run', '--model', 'oracle', '--model', `replay:${join(root, 'a.jsonl')}`, ...common, '--out', dirA], { timeoutMs: 280_000 });
  expect({ status: a.status, stderr: a.stderr }).toEqual({ status: 0, stderr: expect.anything() });
  const b = rcb(['run', '--model', `replay:${join(root, 'b.jsonl')}`, ...common, '--out', dirB], { timeoutMs: 280_000 });
  expect({ status: b.status, stderr: b.stderr }).toEqual({ status: 0, stderr: expect.anything() });
});

/** Scaled pass@1 of a plan, percent: LoC-weighted, mean over the two samples. */
function expectedScaled(plans: Plan[]): number {
  const total = plans.reduce((a, p) => a + p.loc, 0);
  const passed = plans.reduce((a, p) => a + (p.loc * p.samples.filter((o) => o === 'right').length) / p.samples.length, 0);
  return (100 * passed) / total;
}

describe('rcb report --format html, read in headless Chromium', () => {
  let browser: Browser;
  const htmlFile = join(root, 'report.html');
  let json: { models: JsonModel[] };

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install it with \`bash scripts/system-packages.sh --test\` (or set RCB_CHROMIUM)`);
    const r = rcb(['report', dirA, '--format', 'html']);
    expect(r.status).toBe(0);
    writeFileSync(htmlFile, r.stdout);
    json = JSON.parse(rcb(['report', dirA, '--format', 'json']).stdout);
    const puppeteer = await import('puppeteer-core');
    // Chromium refuses to start as root with its own sandbox; the page runs no script but its own (see the CSP check).
    browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] });
  });

  afterAll(async () => {
    await browser?.close();
  });

  it("is one file that asks for nothing over the network and runs none of the answers' markup", async () => {
    const page = await browser.newPage();
    const requests: string[] = [];
    page.on('request', (req) => requests.push(req.url()));
    const dialogs: string[] = [];
    page.on('dialog', async (d) => {
      dialogs.push(d.message());
      await d.dismiss();
    });
    await page.goto(`file://${htmlFile}`, { waitUntil: 'load' });
    // Only the page itself: no stylesheet, font, script or image from anywhere.
    expect(requests).toEqual([`file://${htmlFile}`]);
    expect(await page.title()).toMatch(/^rcb report: /);
    expect(dialogs).toEqual([]);
    // The markup is there, as text, in the answer it came with.
    const answers = await page.$$eval('details.task[data-model="mixed"] pre.answer', (els) => els.map((e) => e.textContent ?? ''));
    expect(answers.some((a) => a.includes(MARKUP))).toBe(true);
    // One script runs; the tasks travel as data in a block no browser executes.
    expect(await page.$$eval('script:not([type="application/json"])', (els) => els.length)).toBe(1);
    expect(await page.$$eval('script[type="application/json"]', (els) => els.length)).toBe(1);
    // Every link stays on the page, but those into rcb's manual (followed only when clicked).
    const links = await page.$$eval('[src],[href]:not(a.doc)', (els) => els.map((e) => e.getAttribute('src') ?? e.getAttribute('href')));
    expect(links.filter((l) => !l?.startsWith('#'))).toEqual([]);
    const docs = await page.$$eval('a.doc', (els) => els.map((e) => e.getAttribute('href')!));
    expect(docs.every((l) => l.startsWith('file://') && /\/docs\/[\w-]+\.md(#[\w-]+)?$/.test(l))).toBe(true);
    await page.close();
  });

  it('shows the leaderboard values of the JSON report, each with its 95% interval', async () => {
    const page = await browser.newPage();
    await page.goto(`file://${htmlFile}`);
    const rows = await page.$$eval('#leaderboard tr.model-row', (trs) =>
      trs.map((tr) => ({
        model: tr.getAttribute('data-model'),
        scaled: tr.querySelector('[data-metric="scaled"]')!.textContent,
        scaledCi: tr.querySelector('[data-metric="scaled-ci"]')!.textContent,
        pass1Ci: tr.querySelector('[data-metric="pass1-ci"]')!.textContent,
      })),
    );
    const fmt = (x: number) => x.toFixed(2);
    expect(rows.map((r) => r.model)).toEqual(['oracle', 'mixed']);
    for (const m of json.models) {
      const row = rows.find((r) => r.model === m.model)!;
      // Two samples: the spread over samples follows the mean.
      expect(row.scaled).toMatch(new RegExp(`^${fmt(m.scaled.mean)} ± \\d+\\.\\d\\d$`));
      expect(row.scaledCi).toBe(`[${fmt(m.scaled.ci.low)}, ${fmt(m.scaled.ci.high)}]`);
      expect(row.pass1Ci).toBe(`[${fmt(m.pass1.ci.low)}, ${fmt(m.pass1.ci.high)}]`);
    }
    const mixed = json.models.find((m) => m.model === 'mixed')!;
    expect(mixed.scaled.mean).toBeCloseTo(expectedScaled(PLAN_A), 8);
    expect(mixed.scaled.ci.low).toBeLessThan(mixed.scaled.mean);
    expect(mixed.scaled.ci.high).toBeGreaterThan(mixed.scaled.mean);
    await page.close();
  });

  it('draws the charts as inline SVG: bars with intervals, the model x paper heatmap, the length and failure charts', async () => {
    const page = await browser.newPage();
    await page.goto(`file://${htmlFile}`);
    const bars = await page.$$eval('svg#leaderboard-chart rect.bar', (els) =>
      els.map((e) => [e.getAttribute('data-label'), Number(e.getAttribute('data-value'))]),
    );
    expect(bars).toEqual([
      ['oracle', 100],
      ['mixed', Number(expectedScaled(PLAN_A).toFixed(2))],
    ]);
    expect(await page.$$eval('svg#leaderboard-chart g.interval', (els) => els.length)).toBe(2);
    const cells = await page.$$eval('svg#paper-heatmap rect.cell', (els) => els.map((e) => `${e.getAttribute('data-row')}/${e.getAttribute('data-col')}`));
    expect(cells.sort()).toEqual(['mixed/adamlite', 'mixed/smoothfocal', 'oracle/adamlite', 'oracle/smoothfocal']);
    // Rendered, not only present: the heatmap has a size on the page.
    const box = await page.$eval('svg#paper-heatmap', (e) => e.getBoundingClientRect().width);
    expect(box).toBeGreaterThan(200);
    expect(await page.$$eval('svg#length-chart circle.point', (els) => els.length)).toBeGreaterThan(2);
    const segments = await page.$$eval('svg#failure-chart rect.segment', (els) =>
      els.map((e) => [e.getAttribute('data-row'), e.getAttribute('data-key'), Number(e.getAttribute('data-value'))]),
    );
    const wrongSamples = PLAN_A.reduce((a, p) => a + p.samples.filter((o) => o === 'wrong').length, 0);
    const noCode = PLAN_A.reduce((a, p) => a + p.samples.filter((o) => o === 'none').length, 0);
    expect(segments).toContainEqual(['mixed', 'no_code', noCode]);
    expect(segments).toContainEqual(['mixed', 'syntax', wrongSamples]);
    await page.close();
  });

  it('opens a failed task to its answer, the spliced diff, the verdict, the test log and the prompt; saves a screenshot', async () => {
    const page = await browser.newPage();
    await page.setViewport({ width: 1366, height: 900 });
    await page.goto(`file://${htmlFile}`);
    const target = PLAN_A.find((p) => p.samples[0] === 'right' && p.samples[1] === 'wrong')!;
    const selector = `details.task[data-model="mixed"][data-paper="${target.paper}"][data-snippet="${target.snippet}"][data-sample="1"]`;
    expect(await page.$eval(selector, (d) => (d as unknown as { open: boolean }).open)).toBe(false);
    await page.click(`${selector} > summary`);
    const drill = await page.$eval(selector, (d) => ({
      open: (d as unknown as { open: boolean }).open,
      status: d.getAttribute('data-status'),
      verdict: d.querySelector('.verdict')?.textContent,
      answer: d.querySelector('pre.answer')?.textContent,
      answerShown: (d.querySelector('pre.answer') as unknown as { offsetHeight: number } | null)?.offsetHeight ?? 0,
      added: [...d.querySelectorAll('pre.diff .add')].map((e) => e.textContent),
      removed: d.querySelectorAll('pre.diff .del').length,
      stderr: d.querySelector('pre.log.stderr')?.textContent,
      prompt: d.querySelector('pre.prompt-tail')?.textContent,
    }));
    expect(drill.open).toBe(true);
    expect(drill.status).toBe('fail');
    expect(drill.verdict).toMatch(/strict judge: fail.*class syntax/);
    expect(drill.answer).toMatch(/^\s*return \($/m);
    expect(drill.answerShown).toBeGreaterThan(0);
    expect(drill.added).toEqual([expect.stringMatching(/^\+\s*return \($/)]);
    expect(drill.removed).toBeGreaterThan(0);
    expect(drill.stderr).toContain('SyntaxError');
    expect(drill.prompt).toContain(`# TODO: Implement block "${target.snippet}"`);
    // The paper's shared prompt prefix is there once, under its anchor.
    expect(await page.$$eval(`details.prefix[id="prefix-0-${target.paper}"] pre`, (els) => els.length)).toBe(1);

    // The filter hides passing tasks.
    await page.click('#failed-only');
    const shown = await page.$$eval('details.task', (els) =>
      els.filter((e) => getComputedStyle(e).display !== 'none').map((e) => e.getAttribute('data-status')),
    );
    expect(shown.length).toBeGreaterThan(0);
    expect(new Set(shown)).toEqual(new Set(['fail']));
    await page.click('#failed-only');

    const shotDir = process.env.RCB_TEST_ARTIFACTS ?? join(tmpdir(), 'rcb-test-artifacts');
    mkdirSync(shotDir, { recursive: true });
    const shot = join(shotDir, 'html-report.png');
    await page.screenshot({ path: shot, fullPage: true });
    expect(readFileSync(shot).subarray(1, 4).toString()).toBe('PNG');
    process.stderr.write(`html report screenshot: ${shot}\n`);

    // Printable: the filters are not printed and the charts are.
    await page.emulateMediaType('print');
    expect(await page.$eval('.filters', (e) => getComputedStyle(e).display)).toBe('none');
    expect(await page.$eval('svg#leaderboard-chart', (e) => getComputedStyle(e).display)).not.toBe('none');
    await page.close();
  });

  it('is what buildReport writes for `rcb cloud results --format html`: answers and logs from the store alone', async () => {
    // The cloud command hands its store and the format to buildReport; no pset is at hand there.
    const store = new SqliteRunStore(join(dirA, 'rcb.sqlite'));
    const runId = (JSON.parse(readFileSync(join(dirA, 'run.json'), 'utf8')) as { runId: string }).runId;
    try {
      const { text } = await buildReport(store, runId, { format: 'html', subset: 'all' });
      expect(text).toMatch(/^<!DOCTYPE html>/);
      expect(text).toContain('<table id="leaderboard" class="sortable">');
      expect(text).toContain('no diff or prompt: the pset is not at hand here');
      expect(text).toContain('SyntaxError');
    } finally {
      await store.close();
    }
  });

  /** The tasks the list shows, as model|paper|snippet|status|class. */
  const listed = (page: import('puppeteer-core').Page) =>
    page.$$eval('#task-list details.task', (els) =>
      els.map((e) => ['model', 'paper', 'snippet', 'status', 'class'].map((k) => e.getAttribute(`data-${k}`)).join('|')),
    );

  it('sorts a table by the column clicked, both ways', async () => {
    const page = await browser.newPage();
    await page.goto(`file://${htmlFile}`);
    const order = () => page.$$eval('#leaderboard tbody tr', (trs) => trs.map((tr) => tr.getAttribute('data-model')));
    expect(await order()).toEqual(['oracle', 'mixed']);
    const scaledHead = '#leaderboard thead th:nth-child(3)';
    await page.click(scaledHead);
    expect(await order()).toEqual(['mixed', 'oracle']);
    expect(await page.$eval(scaledHead, (th) => th.getAttribute('aria-sort'))).toBe('ascending');
    await page.click(scaledHead);
    expect(await order()).toEqual(['oracle', 'mixed']);
    // The per-paper table by paper, then by its interval column.
    await page.click('#paper-table thead th:nth-child(1)');
    const papers = await page.$$eval('#paper-table tbody tr', (trs) => trs.map((tr) => tr.getAttribute('data-paper')!));
    expect(papers).toEqual([...papers].sort((a, b) => a.localeCompare(b, 'en', { sensitivity: 'base' })));
    await page.close();
  });

  it('filters the tasks by paper, snippet, model, failure class and status', async () => {
    const page = await browser.newPage();
    await page.goto(`file://${htmlFile}`);
    const all = await listed(page);
    expect(all).toHaveLength(PLAN_A.length * 2 * 2);
    await page.select('#f-paper', 'smoothfocal');
    expect(new Set((await listed(page)).map((l) => l.split('|')[1]))).toEqual(new Set(['smoothfocal']));
    await page.select('#model-filter', 'mixed');
    await page.select('#f-class', 'syntax');
    const syntax = await listed(page);
    const expected = PLAN_A.filter((p) => p.paper === 'smoothfocal').reduce((a, p) => a + p.samples.filter((o) => o === 'wrong').length, 0);
    expect(syntax).toHaveLength(expected);
    expect(syntax.every((l) => /^mixed\|smoothfocal\|[^|]+\|fail\|syntax$/.test(l))).toBe(true);
    expect(await page.$eval('#f-count', (e) => e.textContent)).toBe(`${expected} of ${all.length} task sample(s)`);
    await page.click('#f-clear');
    const target = PLAN_A[2];
    await page.type('#f-snippet', target.snippet);
    expect(new Set((await listed(page)).map((l) => l.split('|')[2]))).toEqual(new Set([target.snippet]));
    await page.click('#f-clear');
    await page.select('#f-status', 'pass');
    expect(new Set((await listed(page)).map((l) => l.split('|')[3]))).toEqual(new Set(['pass']));
    await page.close();
  });

  it('opens the tasks of a heatmap cell and of a failure bar', async () => {
    const page = await browser.newPage();
    await page.goto(`file://${htmlFile}`);
    await page.click('svg#paper-heatmap a.go:has(rect[data-row="mixed"][data-col="adamlite"])');
    const cell = await listed(page);
    expect(cell).toHaveLength(PLAN_A.filter((p) => p.paper === 'adamlite').length * 2);
    expect(cell.every((l) => l.startsWith('mixed|adamlite|'))).toBe(true);
    await page.click('svg#failure-chart a.go:has(rect[data-row="mixed"][data-key="no_code"])');
    const bar = await listed(page);
    const noCode = PLAN_A.reduce((a, p) => a + p.samples.filter((o) => o === 'none').length, 0);
    expect(bar).toHaveLength(noCode);
    expect(bar.every((l) => l.startsWith('mixed|') && l.endsWith('|fail|no_code'))).toBe(true);
    // The per-paper table's link does the same.
    await page.click('#paper-table tr[data-model="oracle"][data-paper="smoothfocal"] a.go');
    expect((await listed(page)).every((l) => l.startsWith('oracle|smoothfocal|'))).toBe(true);
    await page.close();
  });

  it("shows each paper's interval in plain view, the JSON report's", async () => {
    const page = await browser.newPage();
    await page.goto(`file://${htmlFile}`);
    const full = JSON.parse(rcb(['report', dirA, '--format', 'json']).stdout) as {
      models: { model: string; papers: { paper: string; scaled: { mean: number; ci: { low: number; high: number } } }[] }[];
    };
    const rows = await page.$$eval('#paper-table tbody tr', (trs) =>
      trs.map((tr) => ({
        key: `${tr.getAttribute('data-model')}/${tr.getAttribute('data-paper')}`,
        ci: tr.querySelector('[data-metric="scaled-ci"]')!.textContent,
        shown: (tr as unknown as { offsetHeight: number }).offsetHeight > 0,
      })),
    );
    const fmt = (x: number) => x.toFixed(2);
    const expected = full.models.flatMap((m) =>
      m.papers.map((p) => ({ key: `${m.model}/${p.paper}`, ci: `[${fmt(p.scaled.ci.low)}, ${fmt(p.scaled.ci.high)}]`, shown: true })),
    );
    expect(rows.sort((a, b) => a.key.localeCompare(b.key))).toEqual(expected.sort((a, b) => a.key.localeCompare(b.key)));
    await page.close();
  });

  it("puts the models side by side on one snippet: the matrix, and every model's answer to it", async () => {
    const page = await browser.newPage();
    await page.goto(`file://${htmlFile}`);
    const target = PLAN_A.find((p) => p.samples[0] === 'right' && p.samples[1] === 'wrong')!;
    const row = `#matrix tbody tr:has(a[data-f-snippet="${target.snippet}"][data-f-paper="${target.paper}"])`;
    const cells = await page.$$eval(`${row} td.mx`, (tds) => tds.map((td) => `${td.getAttribute('data-f-model')}:${td.textContent}`));
    expect(cells).toEqual(['oracle:2/2', 'mixed:1/2']);
    await page.click(`${row} a.go`);
    const cards = await page.$$eval('#side-by-side .card', (els) => els.map((e) => e.getAttribute('data-model')));
    expect(cards).toEqual(['oracle', 'oracle', 'mixed', 'mixed']);
    expect(await page.$eval('#side-by-side h3', (e) => e.textContent)).toContain(`${target.paper} / ${target.snippet}`);
    // A cell narrows to that model.
    await page.click(`${row} td.mx[data-f-model="mixed"]`);
    expect(await listed(page)).toEqual([`mixed|${target.paper}|${target.snippet}|pass|`, `mixed|${target.paper}|${target.snippet}|fail|syntax`]);
    await page.close();
  });

  it('clips no table: each sits in a scroller as wide as the page, on a narrow screen too', async () => {
    const page = await browser.newPage();
    await page.setViewport({ width: 700, height: 900 });
    await page.goto(`file://${htmlFile}`);
    const tables = await page.$$eval('table', (ts) =>
      ts.map((t) => {
        const parent = t.parentElement!;
        const style = getComputedStyle(parent) as unknown as { overflowX: string };
        return { id: t.id, scroller: parent.classList.contains('scroll') && style.overflowX === 'auto', fits: t.scrollWidth <= parent.scrollWidth };
      }),
    );
    expect(tables.length).toBeGreaterThan(5);
    expect(tables.filter((t) => !t.scroller || !t.fits)).toEqual([]);
    await page.close();
  });

  it('draws every chart label inside its chart (the top point of score against cost too)', async () => {
    const page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 900 });
    await page.goto(`file://${htmlFile}`);
    const { total, outside } = await svgTextOutside(page);
    expect(total).toBeGreaterThan(20);
    expect(outside).toEqual([]);
    await page.close();
  });

  it('draws score against cost, one point per model', async () => {
    const page = await browser.newPage();
    await page.goto(`file://${htmlFile}`);
    const points = await page.$$eval('svg#cost-score-chart circle.point', (els) =>
      els.map((e) => [e.getAttribute('data-label'), Number(e.getAttribute('data-y'))]),
    );
    expect(points).toEqual(json.models.map((m) => [m.model, Number(m.scaled.mean.toFixed(2))]));
    await page.close();
  });

  it('shows published scores beside the run with --baseline (an overall_stats.json, or the run import-official makes of it)', async () => {
    const official = JSON.parse(rcb(['report', dirA, '--format', 'json', '--judge', 'official']).stdout) as { models: JsonModel[] };
    const imported = join(root, 'published');
    expect(rcb(['import-official', join(dirA, 'overall_stats.json'), '--out', imported]).status).toBe(0);
    for (const baseline of [join(dirA, 'overall_stats.json'), imported]) {
      const r = rcb(['report', dirA, '--format', 'html', '--baseline', baseline]);
      expect(r.status).toBe(0);
      const file = join(root, 'baseline.html');
      writeFileSync(file, r.stdout);
      const page = await browser.newPage();
      await page.goto(`file://${file}`);
      const cells = await page.$$eval('#leaderboard tbody tr', (trs) =>
        trs.map((tr) => [tr.getAttribute('data-model'), tr.querySelector('[data-metric="published"]')!.textContent]),
      );
      const fmt = (x: number) => x.toFixed(2);
      expect(cells).toEqual(
        ['oracle', 'mixed'].map((m) => {
          const o = official.models.find((x) => x.model === m)!;
          return [m, `${fmt(o.scaled.mean)} [${fmt(o.scaled.ci.low)}, ${fmt(o.scaled.ci.high)}]`];
        }),
      );
      expect(await page.$$eval('#published tbody tr', (trs) => trs.map((tr) => tr.getAttribute('data-model')))).toEqual(['oracle', 'mixed']);
      await page.close();
    }
    const bad = rcb(['report', dirA, '--format', 'html', '--baseline', join(root, 'missing.json')]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain(`--baseline ${join(root, 'missing.json')}`);
  });

  it("shows the published score beside rcb's with --baseline in the table, markdown, csv and json too", () => {
    const baseline = join(dirA, 'overall_stats.json');
    const official = JSON.parse(rcb(['report', dirA, '--format', 'json', '--judge', 'official']).stdout) as { models: JsonModel[] };
    const fmt = (x: number) => x.toFixed(2);
    const cell = (m: string) => {
      const o = official.models.find((x) => x.model === m)!;
      return `${fmt(o.scaled.mean)} [${fmt(o.scaled.ci.low)}, ${fmt(o.scaled.ci.high)}]`;
    };
    const table = rcb(['report', dirA, '--baseline', baseline]);
    expect(table.status).toBe(0);
    const [head, , ...body] = table.stdout.split('\n');
    expect(head).toMatch(/^model\s+scaled pass@1 %\s+95% CI\s+published scaled pass@1 % \[95% CI\]\s+pass@1 %/);
    const mixedRow = body.find((l) => l.startsWith('mixed '))!;
    expect(mixedRow).toContain(cell('mixed'));
    const md = rcb(['report', dirA, '--baseline', baseline, '--format', 'markdown']).stdout;
    expect(md).toContain('| published scaled pass@1 % [95% CI] |');
    expect(md).toContain(`| ${cell('oracle')} |`);
    const csv = rcb(['report', dirA, '--baseline', baseline, '--format', 'csv']).stdout.split('\n');
    const cols = csv[0].split(',');
    expect(cols.slice(-3)).toEqual(['published_scaled_pass1_mean', 'published_scaled_pass1_ci_low', 'published_scaled_pass1_ci_high']);
    const mixed = official.models.find((x) => x.model === 'mixed')!;
    expect(
      csv
        .find((l) => l.startsWith('strict,all,mixed,ALL,'))!
        .split(',')
        .slice(-3),
    ).toEqual([mixed.scaled.mean, mixed.scaled.ci.low, mixed.scaled.ci.high].map(fmt));
    const json = JSON.parse(rcb(['report', dirA, '--baseline', baseline, '--format', 'json']).stdout) as {
      baseline: { label: string };
      models: { model: string; published: { scaled: { mean: number } } }[];
    };
    expect(json.baseline.label).toContain(baseline);
    expect(json.models.find((m) => m.model === 'mixed')!.published.scaled.mean).toBeCloseTo(mixed.scaled.mean, 8);
    const refused = rcb(['report', dirA, '--baseline', baseline, '--format', 'official']);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('--baseline');
  });

  it('puts several runs on one page, naming a model two runs share by its run', async () => {
    const r = rcb(['report', dirA, dirB, '--format', 'html']);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`mixed @ ${dirA}`);
    expect(r.stdout).toContain(`mixed @ ${dirB}`);
  });
});

describe('rcb show', () => {
  it("prints a task's answer, the diff of the spliced file, the verdict and the test log", () => {
    const target = PLAN_A.find((p) => p.samples[1] === 'wrong')!;
    const r = rcb(['show', dirA, '--paper', target.paper, '--snippet', target.snippet, '--model', 'mixed', '--sample', '1']);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`=== ${target.paper} / ${target.file} / ${target.snippet}  model mixed  sample 1`);
    expect(r.stdout).toMatch(/verdict: strict judge: fail; strict fail, official fail; class syntax/);
    expect(r.stdout).toMatch(/--- diff of the spliced file:\n--- a\/\S+\n\+\+\+ b\/\S+\n@@ -\d+,\d+ \+\d+,\d+ @@/);
    expect(r.stdout).toMatch(/^\+\s*return \($/m);
    expect(r.stdout).toMatch(/--- stderr \(\d+ bytes\):[\s\S]*SyntaxError/);
    expect(r.stderr).toContain('1 task(s) shown, 1 failed under the strict judge');
  });

  it("--prompt adds the task's prompt: the paper's shared prefix and the masked file", () => {
    const target = PLAN_A[1];
    const r = rcb(['show', dirA, '--paper', target.paper, '--snippet', target.snippet, '--model', 'oracle', '--sample', '0', '--prompt']);
    expect(r.status).toBe(0);
    const prompt = r.stdout.slice(r.stdout.indexOf('--- prompt:\n') + '--- prompt:\n'.length);
    expect(r.stdout).toContain('--- prompt:\n');
    // The exact prompt `rcb prompt` prints for the task.
    expect(prompt.trimEnd()).toBe(rcb(['prompt', target.paper, target.snippet]).stdout.trimEnd());
  });

  it('--failed shows only the tasks that did not pass', () => {
    const r = rcb(['show', dirA, '--model', 'mixed', '--failed']);
    expect(r.status).toBe(0);
    const failing = PLAN_A.reduce((a, p) => a + p.samples.filter((o) => o !== 'right').length, 0);
    expect(r.stderr).toContain(`${failing} task(s) shown, ${failing} failed under the strict judge`);
    expect(r.stdout).not.toMatch(/strict judge: pass/);
  });

  it('answers a misspelt snippet with the nearest names', () => {
    const r = rcb(['show', dirA, '--paper', 'adamlite', '--snippet', 'cosine decy']);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('--snippet: unknown snippet "cosine decy" among the tasks of the run; did you mean "cosine decay"?');
  });
});

describe('rcb compare', () => {
  it('gives per model the paired difference with its interval and the tasks that flipped', () => {
    const r = rcb(['compare', dirA, dirB, '--json']);
    expect(r.status).toBe(0);
    const c = JSON.parse(r.stdout) as {
      models: {
        model: string;
        tasks: number;
        difference: number;
        ci: { low: number; high: number };
        gained: { snippet: string; a: string; b: string }[];
        lost: { snippet: string; a: string; b: string }[];
      }[];
      onlyA: string[];
    };
    expect(c.onlyA).toEqual(['oracle']);
    const m = c.models.find((x) => x.model === 'mixed')!;
    expect(m.tasks).toBe(PLAN_A.length);
    expect(m.difference).toBeCloseTo(expectedScaled(PLAN_B) - expectedScaled(PLAN_A), 8);
    expect(m.ci.low).toBeLessThanOrEqual(m.difference);
    expect(m.ci.high).toBeGreaterThanOrEqual(m.difference);
    expect(m.lost).toEqual([expect.objectContaining({ snippet: PLAN_A[0].snippet, a: '2/2', b: '0/2', classesA: [], classesB: ['syntax'] })]);
    expect(m.gained).toEqual([expect.objectContaining({ snippet: PLAN_A[3].snippet, a: '0/2', b: '2/2', classesA: ['no_code'], classesB: [] })]);
    const text = rcb(['compare', dirA, dirB]);
    expect(text.stdout).toMatch(/mixed: 14 task\(s\) in both\n\s+scaled pass@1 %\s+A [\d.]+\s+B [\d.]+\s+B-A [+-]?[\d.]+ \[[+-]?[\d.]+, [+-]?[\d.]+\]/);
    expect(text.stdout).toContain(`${PLAN_A[0].paper}/${PLAN_A[0].snippet} (${PLAN_A[0].file}, ${PLAN_A[0].loc} LoC): 2/2 -> 0/2 (syntax)`);
  });
});

describe('rcb runs', () => {
  it('lists the run directories with their spec, status and scores', () => {
    const r = rcb(['runs', runsDir, '--json']);
    expect(r.status).toBe(0);
    const runs = JSON.parse(r.stdout) as {
      dir: string;
      status: string;
      models: string[];
      samples: number;
      papers: number;
      scores: Record<string, number>;
      judged: number;
      tasks: number;
    }[];
    const byDir = Object.fromEntries(runs.map((x) => [x.dir, x]));
    expect(byDir[dirA]).toMatchObject({ status: 'succeeded', models: ['oracle', 'mixed'], samples: 2, papers: 2, judged: 56, tasks: 56 });
    expect(byDir[dirA].scores.oracle).toBe(100);
    expect(byDir[dirB].scores.mixed).toBeCloseTo(expectedScaled(PLAN_B), 8);
    const text = rcb(['runs', runsDir]);
    expect(text.stdout).toMatch(/run \w{16}\s+succeeded/);
    expect(text.stdout).toMatch(/scaled pass@1 % \(strict\): oracle 100\.00 \[100\.00, 100\.00\], mixed [\d.]+ \[[\d.]+, [\d.]+\]/);
  });
});
