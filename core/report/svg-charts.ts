/**
 * The HTML report's charts, drawn as inline SVG by rcb itself: four chart shapes are all
 * the report needs, and a charting library would weigh more than the whole report and
 * bring script the report's content policy would have to admit. Every chart scales with
 * its container (viewBox), names its marks with <title> for hover and screen readers, and
 * uses the Okabe-Ito palette, which stays distinguishable for colour-blind readers and in
 * greyscale print.
 */

export const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#000000'];

export function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

const num = (x: number) => (Math.round(x * 10) / 10).toString();
const FONT = 'font-family="system-ui, sans-serif" font-size="12"';

function svg(id: string, width: number, height: number, label: string, body: string[]): string {
  return (
    `<svg id="${escapeXml(id)}" class="chart" viewBox="0 0 ${width} ${height}" width="100%" style="max-width:${width}px" role="img" aria-label="${escapeXml(label)}" ${FONT}>` +
    body.join('') +
    '</svg>'
  );
}

/** Vertical grid lines and labels of a 0-100 percent axis from x0 to x1. */
function percentAxis(x0: number, x1: number, top: number, bottom: number): string[] {
  const out: string[] = [];
  for (let p = 0; p <= 100; p += 25) {
    const x = x0 + ((x1 - x0) * p) / 100;
    out.push(`<line x1="${num(x)}" y1="${top}" x2="${num(x)}" y2="${bottom}" stroke="#ddd"/>`);
    out.push(`<text x="${num(x)}" y="${bottom + 14}" text-anchor="middle" fill="#555">${p}%</text>`);
  }
  return out;
}

export interface IntervalBar {
  label: string;
  /** Percent; null for n/a. */
  value: number | null;
  low: number | null;
  high: number | null;
  color: string;
  /** Hover text. */
  title: string;
}

/** Horizontal bars on 0-100% with the interval drawn as a whisker over each bar. */
export function intervalBarChart(id: string, label: string, bars: IntervalBar[]): string {
  const left = 170;
  const right = 640;
  const rowH = 26;
  const top = 8;
  const height = top + bars.length * rowH + 24;
  const x = (p: number) => left + ((right - left) * p) / 100;
  const body = percentAxis(left, right, top, top + bars.length * rowH);
  bars.forEach((b, i) => {
    const y = top + i * rowH;
    body.push(`<text x="${left - 8}" y="${y + 17}" text-anchor="end">${escapeXml(truncate(b.label, 26))}</text>`);
    if (b.value === null) {
      body.push(`<text x="${left + 4}" y="${y + 17}" fill="#777">n/a</text>`);
      return;
    }
    body.push(
      `<rect class="bar" data-label="${escapeXml(b.label)}" data-value="${b.value.toFixed(2)}" x="${left}" y="${y + 5}" width="${num(x(b.value) - left)}" height="${rowH - 10}" fill="${b.color}" fill-opacity="0.8"><title>${escapeXml(b.title)}</title></rect>`,
    );
    if (b.low !== null && b.high !== null) {
      const cy = y + rowH / 2;
      body.push(
        `<g class="interval" stroke="#222" stroke-width="1.5"><line x1="${num(x(b.low))}" y1="${cy}" x2="${num(x(b.high))}" y2="${cy}"/>` +
          `<line x1="${num(x(b.low))}" y1="${cy - 5}" x2="${num(x(b.low))}" y2="${cy + 5}"/><line x1="${num(x(b.high))}" y1="${cy - 5}" x2="${num(x(b.high))}" y2="${cy + 5}"/></g>`,
      );
    }
    body.push(`<text x="${num(Math.min(x(b.high ?? b.value), right) + 6)}" y="${y + 17}" fill="#222">${b.value.toFixed(1)}</text>`);
  });
  return svg(id, right + 50, height, label, body);
}

export interface HeatCell {
  value: number | null;
  title: string;
  /** Filters a click on the cell sets (the page's task list): data-f-* attributes. */
  go?: Record<string, string>;
}

/** An in-page link that sets the task filters it names (the page's script reads data-go and data-f-*). */
function goLink(go: Record<string, string> | undefined, inner: string): string {
  if (!go) return inner;
  const attrs = Object.entries(go)
    .map(([k, v]) => ` data-f-${k}="${escapeXml(v)}"`)
    .join('');
  return `<a class="go" href="#s-tasks" data-go=""${attrs}>${inner}</a>`;
}

/** Rows x columns of percent values, coloured from white (0%) to the palette's blue (100%). */
export function heatmap(id: string, label: string, rows: string[], cols: string[], cell: (row: number, col: number) => HeatCell): string {
  const left = 170;
  const colW = Math.max(48, Math.min(90, Math.floor(560 / Math.max(1, cols.length))));
  const rowH = 26;
  const top = 70;
  // Room on the right for the last column's slanted label.
  const width = left + cols.length * colW + 90;
  const body: string[] = [];
  cols.forEach((c, j) => {
    const cx = left + j * colW + colW / 2;
    body.push(`<text x="${num(cx)}" y="${top - 8}" transform="rotate(-35 ${num(cx)} ${top - 8})" fill="#333">${escapeXml(truncate(c, 18))}</text>`);
  });
  rows.forEach((r, i) => {
    const y = top + i * rowH;
    body.push(`<text x="${left - 8}" y="${y + 17}" text-anchor="end">${escapeXml(truncate(r, 26))}</text>`);
    cols.forEach((_, j) => {
      const { value, title, go } = cell(i, j);
      const x = left + j * colW;
      const fill = value === null ? '#f3f3f3' : shade(value);
      const text = value === null ? '–' : value.toFixed(0);
      body.push(
        goLink(
          go,
          `<rect class="cell" data-row="${escapeXml(r)}" data-col="${escapeXml(cols[j])}" data-value="${value === null ? '' : value.toFixed(2)}" x="${x + 1}" y="${y + 1}" width="${colW - 2}" height="${rowH - 2}" fill="${fill}"><title>${escapeXml(title)}</title></rect>` +
            `<text x="${num(x + colW / 2)}" y="${y + 17}" text-anchor="middle" pointer-events="none" fill="${value !== null && value > 55 ? '#fff' : '#222'}">${text}</text>`,
        ),
      );
    });
  });
  return svg(id, width, top + rows.length * rowH + 8, label, body);
}

/** 0% white to 100% #0072B2, linearly in RGB. */
function shade(p: number): string {
  const t = Math.max(0, Math.min(1, p / 100));
  const mix = (a: number, b: number) => Math.round(a + (b - a) * t);
  return `rgb(${mix(255, 0x00)},${mix(255, 0x72)},${mix(255, 0xb2)})`;
}

export interface Series {
  label: string;
  color: string;
  /** One point per category; null where the series has no data. */
  points: ({ value: number; title: string } | null)[];
}

/** Percent values over ordered categories (snippet-length bins), one line per series. */
export function categoryLineChart(id: string, label: string, categories: string[], series: Series[]): string {
  const left = 50;
  const right = 640;
  const top = 10;
  const bottom = 230;
  const step = categories.length > 1 ? (right - left) / (categories.length - 1) : 0;
  const x = (i: number) => (categories.length > 1 ? left + i * step : (left + right) / 2);
  const y = (p: number) => bottom - ((bottom - top) * p) / 100;
  const body: string[] = [];
  for (let p = 0; p <= 100; p += 25) {
    body.push(`<line x1="${left}" y1="${num(y(p))}" x2="${right}" y2="${num(y(p))}" stroke="#ddd"/>`);
    body.push(`<text x="${left - 6}" y="${num(y(p) + 4)}" text-anchor="end" fill="#555">${p}%</text>`);
  }
  categories.forEach((c, i) => body.push(`<text x="${num(x(i))}" y="${bottom + 16}" text-anchor="middle" fill="#555">${escapeXml(c)}</text>`));
  body.push(`<text x="${(left + right) / 2}" y="${bottom + 32}" text-anchor="middle" fill="#333">lines of code of the snippet</text>`);
  for (const s of series) {
    const pts = s.points.map((p, i) => (p ? `${num(x(i))},${num(y(p.value))}` : null));
    // Draw the line through consecutive points only: a gap stays a gap.
    let run: string[] = [];
    const flush = () => {
      if (run.length > 1) body.push(`<polyline points="${run.join(' ')}" fill="none" stroke="${s.color}" stroke-width="2"/>`);
      run = [];
    };
    pts.forEach((p) => (p ? run.push(p) : flush()));
    flush();
    s.points.forEach((p, i) => {
      if (!p) return;
      body.push(
        `<circle class="point" data-series="${escapeXml(s.label)}" data-category="${escapeXml(categories[i])}" data-value="${p.value.toFixed(2)}" cx="${num(x(i))}" cy="${num(y(p.value))}" r="4" fill="${s.color}"><title>${escapeXml(p.title)}</title></circle>`,
      );
    });
  }
  return svg(id, right + 20, bottom + 40, label, body);
}

export interface StackPart {
  key: string;
  value: number;
  color: string;
  /** Filters a click on the segment sets: data-f-* attributes. */
  go?: Record<string, string>;
}

/** One bar per row, its parts stacked left to right as shares of the row's total. */
export function stackedBarChart(id: string, label: string, rows: { label: string; parts: StackPart[] }[]): string {
  const left = 170;
  const right = 640;
  const rowH = 26;
  const body: string[] = [];
  rows.forEach((r, i) => {
    const y = 4 + i * rowH;
    body.push(`<text x="${left - 8}" y="${y + 17}" text-anchor="end">${escapeXml(truncate(r.label, 26))}</text>`);
    const total = r.parts.reduce((a, p) => a + p.value, 0);
    if (!total) {
      body.push(`<text x="${left + 4}" y="${y + 17}" fill="#777">no failure</text>`);
      return;
    }
    let x = left;
    for (const p of r.parts) {
      if (!p.value) continue;
      const w = ((right - left) * p.value) / total;
      body.push(
        goLink(
          p.go,
          `<rect class="segment" data-row="${escapeXml(r.label)}" data-key="${escapeXml(p.key)}" data-value="${p.value}" x="${num(x)}" y="${y + 4}" width="${num(w)}" height="${rowH - 8}" fill="${p.color}"><title>${escapeXml(`${r.label}: ${p.key} ${p.value} (${((100 * p.value) / total).toFixed(0)}%)`)}</title></rect>` +
            (w > 28 ? `<text x="${num(x + w / 2)}" y="${y + 17}" text-anchor="middle" pointer-events="none" fill="#fff">${p.value}</text>` : ''),
        ),
      );
      x += w;
    }
  });
  return svg(id, right + 20, 8 + rows.length * rowH, label, body);
}

export interface ScatterPoint {
  label: string;
  /** USD. */
  x: number;
  /** Percent, with its interval when known. */
  y: number;
  low: number | null;
  high: number | null;
  color: string;
  title: string;
}

/** Score (0-100%, with its interval as a vertical whisker) against cost in USD, one labelled point per model. */
export function scatterChart(id: string, label: string, xLabel: string, points: ScatterPoint[]): string {
  const left = 56;
  const right = 660;
  const top = 10;
  const bottom = 300;
  const maxX = Math.max(0, ...points.map((p) => p.x));
  const span = maxX > 0 ? niceCeil(maxX) : 1;
  const x = (v: number) => left + ((right - left) * v) / span;
  const y = (p: number) => bottom - ((bottom - top) * p) / 100;
  const body: string[] = [];
  for (let p = 0; p <= 100; p += 25) {
    body.push(`<line x1="${left}" y1="${num(y(p))}" x2="${right}" y2="${num(y(p))}" stroke="#ddd"/>`);
    body.push(`<text x="${left - 6}" y="${num(y(p) + 4)}" text-anchor="end" fill="#555">${p}%</text>`);
  }
  for (let i = 0; i <= 4; i++) {
    const v = (span * i) / 4;
    body.push(`<line x1="${num(x(v))}" y1="${top}" x2="${num(x(v))}" y2="${bottom}" stroke="#eee"/>`);
    body.push(`<text x="${num(x(v))}" y="${bottom + 16}" text-anchor="middle" fill="#555">$${v < 1 ? v.toFixed(3) : v.toFixed(2)}</text>`);
  }
  body.push(`<text x="${(left + right) / 2}" y="${bottom + 34}" text-anchor="middle" fill="#333">${escapeXml(xLabel)}</text>`);
  for (const p of points) {
    const cx = x(p.x);
    if (p.low !== null && p.high !== null)
      body.push(`<line class="interval" x1="${num(cx)}" y1="${num(y(p.low))}" x2="${num(cx)}" y2="${num(y(p.high))}" stroke="${p.color}" stroke-width="1.5"/>`);
    body.push(
      `<circle class="point" data-label="${escapeXml(p.label)}" data-x="${p.x.toFixed(4)}" data-y="${p.y.toFixed(2)}" cx="${num(cx)}" cy="${num(y(p.y))}" r="5" fill="${p.color}"><title>${escapeXml(p.title)}</title></circle>`,
    );
    body.push(`<text x="${num(cx + 7)}" y="${num(y(p.y) - 6)}" fill="#333" font-size="11">${escapeXml(truncate(p.label, 22))}</text>`);
  }
  return svg(id, right + 90, bottom + 44, label, body);
}

/** 1, 2 or 5 times a power of ten, at least v. */
function niceCeil(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function truncate(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}
