/**
 * `rcb report RUN [RUN] --format figures --out DIR`: the paper's figures written as SVG and
 * PNG (core/report/figures/figures.ts draws them; Chromium rasterises them and checks that no
 * label is clipped).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Judge } from '../core/types';
import { figureSet, type FigureRun } from '../core/report/figures/figures';
import { renderPngs } from '../adapters/local/chromium-png';

export interface WrittenFigure {
  name: string;
  svg: string;
  png: string;
  /** Labels drawn outside the figure (none expected). */
  clipped: string[];
}

/** Print resolution of the PNGs. */
export const FIGURE_DPI = 300;

export async function writeFigures(runs: FigureRun[], outDir: string, judge?: Judge): Promise<WrittenFigure[]> {
  const figures = figureSet(runs, judge);
  mkdirSync(outDir, { recursive: true });
  const jobs = figures.map((f) => {
    const svg = join(outDir, `${f.name}.svg`);
    writeFileSync(svg, f.svg);
    return { ...f, svgPath: svg, path: join(outDir, `${f.name}.png`) };
  });
  const clipped = await renderPngs(jobs, FIGURE_DPI);
  return jobs.map((j, i) => ({ name: j.name, svg: j.svgPath, png: j.path, clipped: clipped[i] }));
}
