/**
 * The HTML report of a full sweep: 32 models x 212 tasks, every answer long and every log at
 * the store's cap. The page must stay one file under 3 MB, cut text must name the `rcb show`
 * command that prints it whole, and the page must still filter and open tasks in Chromium.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'puppeteer-core';
import { buildHtmlReport } from '../../core/report/html-report';
import { exploreData, PROMPT_TEXT_BUDGET } from '../../core/report/explore';
import { taskDetails } from '../../core/report/task-detail';
import { synthesizeSweep, SWEEP_MODELS, SWEEP_TASKS } from '../core/report-synthetic';
import { tempDir } from '../helpers/cli';

jest.setTimeout(240_000);

const CHROMIUM = process.env.RCB_CHROMIUM ?? '/usr/bin/chromium';
const LIMIT = 3 * 1024 * 1024;

describe('rcb report --format html of a 32-model x 212-task sweep', () => {
  const loaded = synthesizeSweep();
  const sources = { pset: null, psetNote: 'the pset is not at hand here', template: null };
  const html = buildHtmlReport([{ label: 'runs/sweep', loaded, sources }], { now: new Date('2026-01-02T00:00:00Z') });
  const file = join(tempDir('rcb-large-html-'), 'report.html');
  let browser: Browser;

  beforeAll(async () => {
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, html);
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install it with \`bash scripts/system-packages.sh --test\` (or set RCB_CHROMIUM)`);
    const puppeteer = await import('puppeteer-core');
    browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] });
  });

  afterAll(async () => {
    await browser?.close();
  });

  it('is one file under 3 MB, its long text cut with the command that prints it whole', () => {
    const bytes = Buffer.byteLength(html);
    process.stderr.write(`html report of ${SWEEP_MODELS} x ${SWEEP_TASKS} tasks: ${(bytes / 1024 / 1024).toFixed(2)} MB\n`);
    expect(loaded.tasks).toHaveLength(SWEEP_MODELS * SWEEP_TASKS);
    expect(bytes).toBeLessThan(LIMIT);
    expect(html).toContain('id="cut-note"');
    expect(html).toContain('"runs":["runs/sweep"]');
  });

  it("keeps the prompts within their share when the pset is at hand: each snippet's prompt cut, with --prompt to print it", () => {
    // The prompts of a real run come from the pset; here every task's is 100 kB.
    const details = taskDetails(loaded, 'strict', sources).map((d) => ({ ...d, promptTail: 'p'.repeat(100_000), promptPrefixChars: 5000 }));
    const data = exploreData([{ label: 'runs/sweep', details, modelIndex: () => 0 }], ['m'], 'strict');
    const promptBytes = data.snippets.reduce((a, s) => a + (s.prompt?.length ?? 0), 0);
    expect(data.snippets).toHaveLength(SWEEP_TASKS);
    expect(promptBytes).toBeLessThanOrEqual(PROMPT_TEXT_BUDGET);
    expect(data.snippets.every((s) => s.promptChars === 100_000)).toBe(true);
  });

  it('opens in Chromium: all task samples counted, a model filter and a heatmap cell narrow them, a task opens', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`file://${file}`, { waitUntil: 'load' });
    expect(errors).toEqual([]);
    expect(await page.$eval('#f-count', (e) => e.textContent)).toBe(
      `${SWEEP_MODELS * SWEEP_TASKS} of ${SWEEP_MODELS * SWEEP_TASKS} task sample(s), first 200 listed`,
    );
    await page.select('#model-filter', 'provider/model-07');
    expect(await page.$eval('#f-count', (e) => e.textContent)).toBe(`${SWEEP_TASKS} of ${SWEEP_MODELS * SWEEP_TASKS} task sample(s), first 200 listed`);
    await page.click('svg#paper-heatmap a.go:has(rect[data-row="provider/model-03"][data-col="Paper-D"])');
    const shown = await page.$$eval('#task-list details.task', (els) => els.map((e) => `${e.getAttribute('data-model')}|${e.getAttribute('data-paper')}`));
    expect(new Set(shown)).toEqual(new Set(['provider/model-03|Paper-D']));
    expect(shown.length).toBe(loaded.tasks.filter((t) => t.model === 'provider/model-03' && t.paper === 'Paper-D').length);
    const first = '#task-list details.task';
    await page.click(`${first} > summary`);
    const cut = await page.$eval(first, (d) => [...d.querySelectorAll('p.cut, p.note')].map((p) => p.textContent ?? ''));
    expect(cut.some((t) => /^answer: \d+ of \d+ characters shown; the whole with: rcb show runs\/sweep --paper Paper-D /.test(t))).toBe(true);
    // The matrix holds every snippet and model.
    expect(await page.$$eval('#matrix tbody tr', (rows) => rows.length)).toBe(SWEEP_TASKS);
    expect(await page.$$eval('#matrix thead th', (ths) => ths.length)).toBe(3 + SWEEP_MODELS);
    // Papers in case-insensitive order in the heatmap: Paper-A, paper-b, paper-c, Paper-D, ...
    const cols = await page.$$eval('svg#paper-heatmap rect.cell[data-row="provider/model-00"]', (els) => els.map((e) => e.getAttribute('data-col')!));
    expect(cols.slice(0, 4)).toEqual(['Paper-A', 'paper-b', 'paper-c', 'Paper-D']);
    await page.close();
  });
});
