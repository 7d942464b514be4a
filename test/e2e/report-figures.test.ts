/**
 * `rcb report RUN [RUN] --format figures --out DIR`: the paper's figures as SVG and PNG, fit to
 * print. Drawn from the 32 published models, and from two small runs of the bundled example
 * with and without the paper; each SVG is opened in headless Chromium and measured.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'puppeteer-core';
import { PSET_MINI, rcb, tempDir } from '../helpers/cli';
import { describeWithRealPset, REAL_PSET } from '../helpers/shared-data';
import { svgTextOutside } from '../helpers/svg-boxes';

jest.setTimeout(300_000);

const CHROMIUM = process.env.RCB_CHROMIUM ?? '/usr/bin/chromium';
const STATS = join(REAL_PSET, '..', 'outputs', '20llms_greedy', '2025-05-12-17-13-20', 'overall_stats.json');
const FIVE = ['leaderboard', 'paper-heatmap', 'safe-vs-all', 'pass-vs-length', 'failure-classes'];

/** Relative luminance (0-255) of #rrggbb. */
function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  return 0.299 * r + 0.587 * g + 0.114 * b;
}

/** Printed size of the smallest text, in points: its font size scaled from the viewBox to the width in pt. */
function smallestTextPt(svg: string): number {
  const [, vw] = /viewBox="0 0 ([\d.]+) [\d.]+"/.exec(svg)!;
  const [, wpt] = /width="([\d.]+)pt"/.exec(svg)!;
  const sizes = [...svg.matchAll(/font-size="([\d.]+)"/g)].map((m) => Number(m[1]));
  return (Math.min(...sizes) * Number(wpt)) / Number(vw);
}

async function launch(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install it with \`bash scripts/system-packages.sh --test\` (or set RCB_CHROMIUM)`);
  const puppeteer = await import('puppeteer-core');
  return puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] });
}

/** Each figure opened alone in Chromium: the labels drawn outside it. */
async function clipped(browser: Browser, dir: string, names: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const name of names) {
    const page = await browser.newPage();
    await page.goto(`file://${join(dir, `${name}.svg`)}`);
    const { total, outside } = await svgTextOutside(page);
    expect(total).toBeGreaterThan(2);
    out.push(...outside.map((o) => `${name}: ${o}`));
    await page.close();
  }
  return out;
}

describeWithRealPset('rcb report --format figures of the 32 published models', () => {
  const root = tempDir('rcb-figures-');
  const out = join(root, 'figures');
  let browser: Browser;
  let stdout = '';

  beforeAll(async () => {
    expect(rcb(['import-official', STATS, '--out', join(root, 'published')]).status).toBe(0);
    const r = rcb(['report', join(root, 'published'), '--format', 'figures', '--out', out], { timeoutMs: 200_000 });
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: expect.stringContaining('5 figure(s) in') });
    stdout = r.stdout;
    browser = await launch();
  });

  afterAll(async () => {
    await browser?.close();
  });

  it('writes each figure as SVG and PNG, and names the files it wrote', () => {
    for (const name of FIVE) {
      expect(stdout).toContain(join(out, `${name}.svg`));
      expect(
        readFileSync(join(out, `${name}.png`))
          .subarray(1, 4)
          .toString(),
      ).toBe('PNG');
      expect(readFileSync(join(out, `${name}.svg`), 'utf8')).toMatch(/^<\?xml[^>]*>\n<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    }
  });

  it('clips no label, and names the models as the published file does', async () => {
    expect(await clipped(browser, out, FIVE)).toEqual([]);
    expect(readFileSync(join(out, 'leaderboard.svg'), 'utf8')).toContain('<title>Gemini-2.5-Pro-Preview-05-06: ');
  });

  it('prints at column width with readable text: 3.5 in for one column, 7 in for two, no text under 6.5 pt', () => {
    const width = (name: string) => Number(/width="([\d.]+)pt"/.exec(readFileSync(join(out, `${name}.svg`), 'utf8'))![1]);
    for (const name of ['leaderboard', 'safe-vs-all', 'failure-classes']) expect(width(name)).toBeLessThanOrEqual(3.5 * 72 + 2);
    for (const name of ['paper-heatmap', 'pass-vs-length']) expect(width(name)).toBeLessThanOrEqual(7 * 72);
    for (const name of FIVE) expect(smallestTextPt(readFileSync(join(out, `${name}.svg`), 'utf8'))).toBeGreaterThanOrEqual(6.5);
  });

  it('tells its series apart in greyscale: the two bars of a pair differ in lightness', () => {
    const svg = readFileSync(join(out, 'safe-vs-all.svg'), 'utf8');
    const fills = [...new Set([...svg.matchAll(/<rect class="pair"[^>]* fill="(#[0-9a-f]{6})"/g)].map((m) => m[1]))];
    expect(fills).toHaveLength(2);
    expect(Math.abs(luminance(fills[0]) - luminance(fills[1]))).toBeGreaterThan(80);
  });
});

describe('rcb report --format figures of a run with the paper and one without', () => {
  const root = tempDir('rcb-figures-pair-');
  const [withPaper, without, out] = ['with', 'without', 'figures'].map((d) => join(root, d));
  let browser: Browser;

  beforeAll(async () => {
    const common = ['run', '--pset', PSET_MINI, '--model', 'oracle', '--model', 'empty', '--papers', 'smoothfocal', '--timeout', '20'];
    expect(rcb([...common, '--out', withPaper], { timeoutMs: 120_000 }).status).toBe(0);
    expect(rcb([...common, '--no-paper', '--out', without], { timeoutMs: 120_000 }).status).toBe(0);
    browser = await launch();
  });

  afterAll(async () => {
    await browser?.close();
  });

  it('adds the with-against-without figure, each model a pair of bars, nothing clipped', async () => {
    const r = rcb(['report', without, withPaper, '--format', 'figures', '--out', out], { timeoutMs: 120_000 });
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: expect.stringContaining('6 figure(s) in') });
    const svg = readFileSync(join(out, 'with-vs-without-paper.svg'), 'utf8');
    const bars = [...svg.matchAll(/<rect class="pair" data-label="([^"]+)" data-key="([^"]+)" data-value="([\d.]+)"/g)].map((m) => `${m[1]}|${m[2]}|${m[3]}`);
    expect(bars.sort()).toEqual([
      'empty|with the paper|0.00',
      'empty|without the paper|0.00',
      'oracle|with the paper|100.00',
      'oracle|without the paper|100.00',
    ]);
    expect(await clipped(browser, out, [...FIVE, 'with-vs-without-paper'])).toEqual([]);
  });

  it('refuses without --out, and two runs alike in the paper, naming them', () => {
    const noOut = rcb(['report', withPaper, '--format', 'figures']);
    expect(noOut.status).toBe(1);
    expect(noOut.stderr).toContain('--format figures writes files: give the folder with --out DIR');
    const alike = rcb(['report', withPaper, withPaper, '--format', 'figures', '--out', join(root, 'x')]);
    expect(alike.status).not.toBe(0);
    expect(alike.stderr).toContain('are both with it');
    expect(alike.stderr).not.toMatch(/\n\s+at /);
  });
});
