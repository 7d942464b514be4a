/**
 * The HTML report at leaderboard scale, as a researcher gets it: the 32 published models of
 * the original harness imported (`rcb import-official`), the page opened in headless
 * Chromium at 1,400 px. Every label inside its chart, the names the published file gives,
 * charts that tell 32 models apart, long tables folded, and a page of reasonable height.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'puppeteer-core';
import { rcb, tempDir } from '../helpers/cli';
import { describeWithRealPset, REAL_PSET } from '../helpers/shared-data';
import { svgTextOutside } from '../helpers/svg-boxes';

jest.setTimeout(240_000);

const CHROMIUM = process.env.RCB_CHROMIUM ?? '/usr/bin/chromium';
// The published verdicts sit beside the real pset in the public data.
const STATS = join(REAL_PSET, '..', 'outputs', '20llms_greedy', '2025-05-12-17-13-20', 'overall_stats.json');

describeWithRealPset('rcb report --format html of the 32 published models, in Chromium at 1,400 px', () => {
  const root = tempDir('rcb-published-html-');
  const file = join(root, 'report.html');
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    expect(rcb(['import-official', STATS, '--out', join(root, 'published')]).status).toBe(0);
    const r = rcb(['report', join(root, 'published'), '--format', 'html']);
    expect(r.status).toBe(0);
    writeFileSync(file, r.stdout);
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install it with \`bash scripts/system-packages.sh --test\` (or set RCB_CHROMIUM)`);
    const puppeteer = await import('puppeteer-core');
    browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] });
    page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 900 });
    await page.goto(`file://${file}`, { waitUntil: 'load' });
  });

  afterAll(async () => {
    await browser?.close();
  });

  it('draws every chart label inside its chart', async () => {
    const { total, outside } = await svgTextOutside(page);
    process.stderr.write(`published page: ${total} chart labels, ${outside.length} outside their chart\n`);
    expect(total).toBeGreaterThan(500);
    expect(outside).toEqual([]);
  });

  it('opens at most 20,000 px tall, its long tables folded by paper', async () => {
    const height = await page.evaluate(
      () => (globalThis as unknown as { document: { documentElement: { scrollHeight: number } } }).document.documentElement.scrollHeight,
    );
    process.stderr.write(`published page: ${height} px tall at 1,400 px wide\n`);
    expect(height).toBeLessThanOrEqual(20_000);
    const groups = await page.$$eval('#paper-table details.paper-group', (ds) =>
      ds.map((d) => [d.getAttribute('data-paper'), (d as unknown as { open: boolean }).open]),
    );
    expect(groups).toHaveLength(20);
    expect(groups.every(([, open]) => open === false)).toBe(true);
    expect(await page.$$eval('#paper-table tbody tr', (trs) => trs.length)).toBe(32 * 20);
  });

  it('names the models as the published file does, the id beside the name and in the tooltips', async () => {
    const row = await page.$eval('#leaderboard tr[data-model="GEMINI_2_5_PRO_PREVIEW_05_06"] td.name', (td) => td.textContent);
    expect(row).toBe('Gemini-2.5-Pro-Preview-05-06 GEMINI_2_5_PRO_PREVIEW_05_06');
    const labels = await page.$$eval('svg#leaderboard-chart > text', (ts) => ts.map((t) => t.lastChild?.textContent ?? ''));
    expect(labels).toContain('Gemini-2.5-Pro-Preview-05-06');
    expect(labels.some((l) => /^[A-Z0-9_]+$/.test(l) && l.includes('_'))).toBe(false);
    const tip = await page.$eval('svg#leaderboard-chart rect.bar[data-label="GEMINI_2_5_PRO_PREVIEW_05_06"] title', (t) => t.textContent);
    expect(tip).toMatch(/^Gemini-2\.5-Pro-Preview-05-06 \(GEMINI_2_5_PRO_PREVIEW_05_06\): scaled pass@1/);
  });

  it('tells 32 models apart: a full-width heatmap, one panel per model for snippet length', async () => {
    const width = await page.$eval('svg#paper-heatmap', (e) => e.getBoundingClientRect().width);
    expect(width).toBeGreaterThan(1200);
    expect(await page.$$eval('svg#paper-heatmap rect.cell', (els) => els.length)).toBe(32 * 20);
    const series = await page.$$eval('svg#length-chart circle.point', (els) => new Set(els.map((e) => e.getAttribute('data-series'))).size);
    expect(series).toBe(32);
    // No colour stands for two models: with more models than colours, one colour, and the charts name each model.
    const colours = await page.$$eval('#leaderboard .swatch', (els) => els.map((e) => (e as unknown as { style: { background: string } }).style.background));
    expect(new Set(colours).size === 1 || new Set(colours).size === colours.length).toBe(true);
    expect(await page.$$eval('#s-length .legend', (els) => els.length)).toBe(0);
  });

  it('speaks in plain words, with links into the manual', async () => {
    const text = await page.$eval('body', (b) => b.textContent ?? '');
    expect(text).not.toMatch(/\bSPEC \d/);
    const docs = await page.$$eval('a.doc', (as) => as.map((a) => a.getAttribute('href')!));
    expect(docs.length).toBeGreaterThan(0);
    for (const href of docs) expect(existsSync(fileURLToPath(href.replace(/#.*$/, '')))).toBe(true);
  });
});
