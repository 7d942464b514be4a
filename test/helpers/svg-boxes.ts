/** Chart labels a browser draws outside their chart: the box of every SVG <text> against its <svg>'s. */
import type { Page } from 'puppeteer-core';

interface Box {
  left: number;
  right: number;
  top: number;
  bottom: number;
}
interface El {
  id: string;
  textContent: string | null;
  getBoundingClientRect(): Box;
  querySelectorAll(s: string): El[];
}

export async function svgTextOutside(page: Page): Promise<{ total: number; outside: string[] }> {
  return page.evaluate(() => {
    const doc = (globalThis as unknown as { document: { querySelectorAll(s: string): El[] } }).document;
    const outside: string[] = [];
    let total = 0;
    for (const svg of doc.querySelectorAll('svg')) {
      const s = svg.getBoundingClientRect();
      for (const t of svg.querySelectorAll('text')) {
        total++;
        const b = t.getBoundingClientRect();
        // Half a pixel for rounding of the scaled viewBox.
        if (b.left < s.left - 0.5 || b.right > s.right + 0.5 || b.top < s.top - 0.5 || b.bottom > s.bottom + 0.5) outside.push(`${svg.id}: ${t.textContent}`);
      }
    }
    return { total, outside };
  });
}
