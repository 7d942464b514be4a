/**
 * SVG to PNG through headless Chromium (Debian's `chromium`, driven by puppeteer-core): no
 * rasteriser ships with Node or Debian's base, and Chromium draws the SVG exactly as the
 * browser test measures it. The same pass measures every text's box against its SVG, so a
 * clipped label is reported, not printed.
 */
import { existsSync } from 'node:fs';

export interface PngJob {
  svg: string;
  widthPt: number;
  heightPt: number;
  /** Where the PNG goes. */
  path: string;
}

/** Chromium's path: $RCB_CHROMIUM, else Debian's. */
export const chromiumPath = (): string => process.env.RCB_CHROMIUM ?? '/usr/bin/chromium';

/** Renders each job at dpi; returns, per job, the texts drawn outside their SVG. */
export async function renderPngs(jobs: PngJob[], dpi: number): Promise<string[][]> {
  const executablePath = chromiumPath();
  if (!existsSync(executablePath)) throw new Error(`${executablePath} is missing: PNG figures need Chromium (apt-get install chromium, or set RCB_CHROMIUM)`);
  const puppeteer = await import('puppeteer-core').catch(() => {
    throw new Error('PNG figures need the puppeteer-core package (a development dependency of rcb: npm ci without --omit=dev)');
  });
  // Chromium refuses to start as root with its own sandbox; the page is rcb's own SVG, with no script.
  const browser = await puppeteer.launch({ executablePath, headless: true, args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] });
  try {
    const out: string[][] = [];
    for (const job of jobs) {
      const page = await browser.newPage();
      const w = Math.ceil((job.widthPt * 96) / 72);
      const h = Math.ceil((job.heightPt * 96) / 72);
      await page.setViewport({ width: w, height: h, deviceScaleFactor: dpi / 96 });
      await page.setJavaScriptEnabled(false);
      await page.setContent(`<!DOCTYPE html><html><body style="margin:0">${job.svg.replace(/^<\?xml[^>]*>\s*/, '')}</body></html>`);
      const svg = await page.$('svg');
      if (!svg) throw new Error(`no SVG drawn for ${job.path}`);
      await svg.screenshot({ path: job.path as `${string}.png` });
      out.push(await outsideTexts(page));
      await page.close();
    }
    return out;
  } finally {
    await browser.close();
  }
}

async function outsideTexts(page: import('puppeteer-core').Page): Promise<string[]> {
  type Box = { left: number; right: number; top: number; bottom: number };
  type El = { textContent: string | null; getBoundingClientRect(): Box; querySelectorAll(s: string): El[] };
  return page.evaluate(() => {
    const doc = (globalThis as unknown as { document: { querySelector(s: string): El } }).document;
    const svg = doc.querySelector('svg');
    const s = svg.getBoundingClientRect();
    return [...svg.querySelectorAll('text')]
      .filter((t) => {
        const b = t.getBoundingClientRect();
        return b.left < s.left - 0.5 || b.right > s.right + 0.5 || b.top < s.top - 0.5 || b.bottom > s.bottom + 0.5;
      })
      .map((t) => t.textContent ?? '');
  });
}
