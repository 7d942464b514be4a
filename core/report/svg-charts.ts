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

/**
 * A label's width in px at a font size, over-estimated: no font is measured here (the page has
 * no script for it and the figures none at all), so the margins are sized from this bound and a
 * label is cut to it; the browser test checks every label's box against its chart's.
 */
export function textWidth(s: string, size = 12): number {
  let w = 0;
  for (const ch of s) {
    if (/[mwMW@%]/.test(ch)) w += 11;
    else if (/[A-Z0-9…]/.test(ch)) w += 8.2;
    else if (/[a-z]/.test(ch)) w += 7;
    else if (ch === ' ') w += 3.6;
    else w += 5.5;
  }
  return (w * size) / 12;
}

/** The label cut with an ellipsis to fit maxPx. */
export function fitText(s: string, maxPx: number, size = 12): string {
  if (textWidth(s, size) <= maxPx) return s;
  let out = s;
  while (out.length > 1 && textWidth(`${out}…`, size) > maxPx) out = out.slice(0, -1);
  return `${out}…`;
}

/** The left margin that holds the longest row label, within bounds; labels beyond it are cut. */
function labelMargin(labels: string[], min = 60, max = 250): number {
  return Math.round(Math.min(max, Math.max(min, ...labels.map((l) => textWidth(l) + 12))));
}

/** Sizes a chart takes from its caller: the page's defaults, or a printed figure's narrower ones. */
export interface ChartLayout {
  /** Width of the plot area of a bar chart. @default 470 */
  plot?: number;
  /** Widest row label before it is cut. @default 250 */
  maxLabel?: number;
  /** Widest heatmap column. @default 90 (40 at least, sized to fill 1080) */
  colW?: number;
  /** Small multiples: panels per row and each panel's width. @default 5, 240 */
  perRow?: number;
  panel?: number;
  /** A key drawn above a stacked bar chart (a figure has no page around it to hold one). */
  key?: { label: string; color: string }[];
}

/** Swatches and names left to right, wrapping within width; returns the marks and the height used. */
function keyRow(items: { label: string; color: string }[], x0: number, width: number): { marks: string[]; height: number } {
  const marks: string[] = [];
  let x = x0;
  let y = 4;
  for (const it of items) {
    const w = 18 + textWidth(it.label) + 12;
    if (x > x0 && x + w > x0 + width) {
      x = x0;
      y += 18;
    }
    marks.push(
      `<rect x="${num(x)}" y="${y}" width="12" height="12" fill="${it.color}" stroke="#222" stroke-width="0.6"/><text x="${num(x + 16)}" y="${y + 10}">${escapeXml(it.label)}</text>`,
    );
    x += w;
  }
  return { marks, height: items.length ? y + 20 : 0 };
}

/** Rows of a long chart are closer together. */
const rowHeight = (n: number) => (n > 12 ? 20 : 26);

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

/** A row's label, right-aligned before the plot and cut to the margin, the whole in its tooltip. */
function labelText(left: number, y: number, label: string, title = label): string {
  return `<text x="${left - 8}" y="${num(y)}" text-anchor="end"><title>${escapeXml(title)}</title>${escapeXml(fitText(label, left - 12))}</text>`;
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
  /** The name drawn beside the bar. @default label */
  display?: string;
}

/** Horizontal bars on 0-100% with the interval drawn as a whisker over each bar. */
export function intervalBarChart(id: string, label: string, bars: IntervalBar[], layout: ChartLayout = {}): string {
  const left = labelMargin(
    bars.map((b) => b.display ?? b.label),
    60,
    layout.maxLabel,
  );
  const right = left + (layout.plot ?? 470);
  const rowH = rowHeight(bars.length);
  const top = 8;
  const height = top + bars.length * rowH + 24;
  const x = (p: number) => left + ((right - left) * p) / 100;
  const body = percentAxis(left, right, top, top + bars.length * rowH);
  bars.forEach((b, i) => {
    const y = top + i * rowH;
    const base = y + rowH / 2 + 4;
    body.push(labelText(left, base, b.display ?? b.label, b.title));
    if (b.value === null) {
      body.push(`<text x="${left + 4}" y="${base}" fill="#777">n/a</text>`);
      return;
    }
    body.push(
      `<rect class="bar" data-label="${escapeXml(b.label)}" data-value="${b.value.toFixed(2)}" x="${left}" y="${y + 4}" width="${num(x(b.value) - left)}" height="${rowH - 8}" fill="${b.color}" fill-opacity="0.8"><title>${escapeXml(b.title)}</title></rect>`,
    );
    if (b.low !== null && b.high !== null) {
      const cy = y + rowH / 2;
      body.push(
        `<g class="interval" stroke="#222" stroke-width="1.5"><line x1="${num(x(b.low))}" y1="${cy}" x2="${num(x(b.high))}" y2="${cy}"/>` +
          `<line x1="${num(x(b.low))}" y1="${cy - 5}" x2="${num(x(b.low))}" y2="${cy + 5}"/><line x1="${num(x(b.high))}" y1="${cy - 5}" x2="${num(x(b.high))}" y2="${cy + 5}"/></g>`,
      );
    }
    body.push(`<text x="${num(Math.min(x(b.high ?? b.value), right) + 6)}" y="${base}" fill="#222">${b.value.toFixed(1)}</text>`);
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

/**
 * Rows x columns of percent values, coloured from white (0%) to the palette's blue (100%), as
 * wide as the page allows; column labels stand vertically above their column.
 */
export function heatmap(
  id: string,
  label: string,
  rows: string[],
  cols: string[],
  cell: (row: number, col: number) => HeatCell,
  rowLabels: string[] = rows,
  layout: ChartLayout = {},
): string {
  const left = labelMargin(rowLabels, 60, layout.maxLabel);
  const colW = layout.colW ?? Math.max(40, Math.min(90, Math.floor(1080 / Math.max(1, cols.length))));
  const rowH = rowHeight(rows.length);
  const colLabels = cols.map((c) => fitText(c, 150));
  const top = Math.ceil(Math.max(...colLabels.map((c) => textWidth(c)))) + 14;
  const width = left + cols.length * colW + 8;
  const body: string[] = [];
  cols.forEach((c, j) => {
    const cx = left + j * colW + colW / 2 + 4;
    body.push(
      `<text x="${num(cx)}" y="${top - 6}" transform="rotate(-90 ${num(cx)} ${top - 6})" fill="#333"><title>${escapeXml(c)}</title>${escapeXml(colLabels[j])}</text>`,
    );
  });
  rows.forEach((r, i) => {
    const y = top + i * rowH;
    body.push(labelText(left, y + rowH / 2 + 4, rowLabels[i], rowLabels[i] === r ? r : `${rowLabels[i]} (${r})`));
    cols.forEach((_, j) => {
      const { value, title, go } = cell(i, j);
      const x = left + j * colW;
      const fill = value === null ? '#f3f3f3' : shade(value);
      const text = value === null ? '–' : value.toFixed(0);
      body.push(
        goLink(
          go,
          `<rect class="cell" data-row="${escapeXml(r)}" data-col="${escapeXml(cols[j])}" data-value="${value === null ? '' : value.toFixed(2)}" x="${x + 1}" y="${y + 1}" width="${colW - 2}" height="${rowH - 2}" fill="${fill}"><title>${escapeXml(title)}</title></rect>` +
            `<text x="${num(x + colW / 2)}" y="${y + rowH / 2 + 4}" text-anchor="middle" pointer-events="none" fill="${value !== null && value > 55 ? '#fff' : '#222'}">${text}</text>`,
        ),
      );
    });
  });
  return svg(id, width, top + rows.length * rowH + 8, label, body);
}

/** Black or white, whichever reads on the fill (#rrggbb): by its luminance. */
export function inkOn(fill: string): string {
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(fill);
  if (!m) return '#fff';
  const [r, g, b] = m.slice(1).map((h) => parseInt(h, 16));
  return 0.299 * r + 0.587 * g + 0.114 * b > 150 ? '#111' : '#fff';
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
  /** The name drawn for the series. @default label */
  display?: string;
}

/** Dash patterns that tell lines apart in greyscale, beside their colour. */
export const DASHES = ['', '6 3', '2 3', '8 3 2 3', '12 4', '3 6', '1 2', '10 2 2 2 2 2'];

/** Above this many series the lines would overlap: one small panel per series instead. */
export const MAX_LINES = 8;

/** A polyline through consecutive points only: a gap stays a gap. */
function lines(pts: (string | null)[], attrs: string): string[] {
  const out: string[] = [];
  let run: string[] = [];
  const flush = () => {
    if (run.length > 1) out.push(`<polyline points="${run.join(' ')}" fill="none" ${attrs}/>`);
    run = [];
  };
  pts.forEach((p) => (p ? run.push(p) : flush()));
  flush();
  return out;
}

const pointMark = (s: Series, i: number, category: string, cx: number, cy: number, r: number) => {
  const p = s.points[i]!;
  return `<circle class="point" data-series="${escapeXml(s.label)}" data-category="${escapeXml(category)}" data-value="${p.value.toFixed(2)}" cx="${num(cx)}" cy="${num(cy)}" r="${r}" fill="${s.color}"><title>${escapeXml(p.title)}</title></circle>`;
};

/**
 * Percent values over ordered categories (snippet-length bins): one line per series, each with its
 * own dash and its name at its end; more than MAX_LINES series become small multiples.
 */
export function categoryLineChart(id: string, label: string, categories: string[], series: Series[], layout: ChartLayout = {}): string {
  if (series.length > MAX_LINES) return smallMultiples(id, label, categories, series, layout);
  const ends = series.map((s) => fitText(s.display ?? s.label, 200));
  const left = 50;
  const right = 600;
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
  const labels: { y: number; text: string; color: string }[] = [];
  series.forEach((s, k) => {
    const pts = s.points.map((p, i) => (p ? `${num(x(i))},${num(y(p.value))}` : null));
    body.push(...lines(pts, `stroke="${s.color}" stroke-width="2"${DASHES[k % DASHES.length] ? ` stroke-dasharray="${DASHES[k % DASHES.length]}"` : ''}`));
    s.points.forEach((p, i) => p && body.push(pointMark(s, i, categories[i], x(i), y(p.value), 4)));
    const last = s.points
      .map((p, i) => (p ? i : -1))
      .filter((i) => i >= 0)
      .pop();
    if (last !== undefined) labels.push({ y: y(s.points[last]!.value) + 4, text: ends[k], color: s.color });
  });
  // Direct labels at the right edge, pushed apart so that none overlaps another.
  labels.sort((a, b) => a.y - b.y);
  labels.forEach((l, i) => (l.y = Math.max(l.y, i ? labels[i - 1].y + 13 : top + 10)));
  const height = Math.max(bottom + 40, (labels.at(-1)?.y ?? 0) + 6);
  for (const l of labels) body.push(`<text class="end-label" x="${right + 8}" y="${num(l.y)}" fill="${l.color}">${escapeXml(l.text)}</text>`);
  const width = right + 14 + Math.ceil(Math.max(0, ...ends.map((e) => textWidth(e))));
  return svg(id, width, height, label, body);
}

/** One small panel per series, its line dark over the median of all series (dashed grey). */
function smallMultiples(id: string, label: string, categories: string[], series: Series[], layout: ChartLayout): string {
  const perRow = layout.perRow ?? 5;
  const pw = layout.panel ?? 240;
  const ph = 120;
  const pad = { left: 34, right: 16, top: 20, bottom: 22 };
  const median = categories.map((_, i) => {
    const v = series
      .map((s) => s.points[i]?.value)
      .filter((x): x is number => x !== undefined)
      .sort((a, b) => a - b);
    return v.length ? (v[Math.floor((v.length - 1) / 2)] + v[Math.ceil((v.length - 1) / 2)]) / 2 : null;
  });
  const body: string[] = [];
  series.forEach((s, k) => {
    const ox = (k % perRow) * pw;
    const oy = Math.floor(k / perRow) * ph;
    const l = ox + pad.left;
    const r = ox + pw - pad.right;
    const t = oy + pad.top;
    const b = oy + ph - pad.bottom;
    const x = (i: number) => (categories.length > 1 ? l + ((r - l) * i) / (categories.length - 1) : (l + r) / 2);
    const y = (p: number) => b - ((b - t) * p) / 100;
    const name = s.display ?? s.label;
    body.push(
      `<text x="${l}" y="${oy + 13}" font-weight="600"><title>${escapeXml(name === s.label ? name : `${name} (${s.label})`)}</title>${escapeXml(fitText(name, (pw - pad.left - 4) / 1.12))}</text>`,
    );
    for (const p of [0, 50, 100]) {
      body.push(`<line x1="${l}" y1="${num(y(p))}" x2="${r}" y2="${num(y(p))}" stroke="#e3e3e3"/>`);
      if (k % perRow === 0) body.push(`<text x="${l - 4}" y="${num(y(p) + 4)}" text-anchor="end" fill="#555" font-size="10">${p}%</text>`);
    }
    if (Math.floor(k / perRow) === Math.floor((series.length - 1) / perRow) || k + perRow >= series.length)
      categories.forEach((c, i) => body.push(`<text x="${num(x(i))}" y="${b + 14}" text-anchor="middle" fill="#555" font-size="10">${escapeXml(c)}</text>`));
    body.push(
      ...lines(
        median.map((v, i) => (v === null ? null : `${num(x(i))},${num(y(v))}`)),
        'stroke="#aaa" stroke-width="1.5" stroke-dasharray="4 3"',
      ),
    );
    body.push(
      ...lines(
        s.points.map((p, i) => (p ? `${num(x(i))},${num(y(p.value))}` : null)),
        'stroke="#222" stroke-width="2"',
      ),
    );
    s.points.forEach((p, i) => p && body.push(pointMark({ ...s, color: '#222' }, i, categories[i], x(i), y(p.value), 3)));
  });
  const rowsN = Math.ceil(series.length / perRow);
  const height = rowsN * ph + 22;
  body.push(
    `<text x="${(perRow * pw) / 2}" y="${height - 6}" text-anchor="middle" fill="#333">lines of code of the snippet; dashed grey: the median over the ${series.length} models</text>`,
  );
  return svg(id, perRow * pw, height, label, body);
}

export interface StackPart {
  key: string;
  value: number;
  color: string;
  /** The number's colour on the segment. @default white */
  ink?: string;
  /** Outline the segment (light fills beside each other). */
  pattern?: boolean;
  /** Filters a click on the segment sets: data-f-* attributes. */
  go?: Record<string, string>;
}

/** One bar per row, its parts stacked left to right as shares of the row's total. */
export function stackedBarChart(id: string, label: string, rows: { label: string; parts: StackPart[]; display?: string }[], layout: ChartLayout = {}): string {
  const left = labelMargin(
    rows.map((r) => r.display ?? r.label),
    60,
    layout.maxLabel,
  );
  const right = left + (layout.plot ?? 470);
  const rowH = rowHeight(rows.length);
  const key = keyRow(layout.key ?? [], 4, right + 12);
  const top = 4 + key.height;
  const body: string[] = [...key.marks];
  rows.forEach((r, i) => {
    const y = top + i * rowH;
    const base = y + rowH / 2 + 4;
    const name = r.display ?? r.label;
    body.push(labelText(left, base, name, name === r.label ? name : `${name} (${r.label})`));
    const total = r.parts.reduce((a, p) => a + p.value, 0);
    if (!total) {
      body.push(`<text x="${left + 4}" y="${base}" fill="#777">no failure</text>`);
      return;
    }
    let x = left;
    for (const p of r.parts) {
      if (!p.value) continue;
      const w = ((right - left) * p.value) / total;
      body.push(
        goLink(
          p.go,
          `<rect class="segment" data-row="${escapeXml(r.label)}" data-key="${escapeXml(p.key)}" data-value="${p.value}" x="${num(x)}" y="${y + 3}" width="${num(w)}" height="${rowH - 6}" fill="${p.color}"${p.pattern ? ` stroke="#222" stroke-width="0.5"` : ''}><title>${escapeXml(`${name}: ${p.key} ${p.value} (${((100 * p.value) / total).toFixed(0)}%)`)}</title></rect>` +
            (w > textWidth(String(p.value)) + 6
              ? `<text x="${num(x + w / 2)}" y="${base}" text-anchor="middle" pointer-events="none" fill="${p.ink ?? inkOn(p.color)}">${p.value}</text>`
              : ''),
        ),
      );
      x += w;
    }
  });
  return svg(id, right + 20, top + 4 + rows.length * rowH, label, body);
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
  /** The name drawn beside the point. @default label */
  display?: string;
}

/** Score (0-100%, with its interval as a vertical whisker) against cost in USD, one labelled point per model. */
export function scatterChart(id: string, label: string, xLabel: string, points: ScatterPoint[]): string {
  const left = 56;
  const right = 660;
  // Room above the 100% line for the label of a point drawn on it.
  const top = 24;
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
    // Many labels near each other would cover one another: then the tooltips name the points.
    if (points.length > MAX_LINES) continue;
    const text = fitText(p.display ?? p.label, 160, 11);
    // Right of the point, or left of it where the chart's edge is near.
    const after = cx + 7 + textWidth(text, 11) <= right + 90;
    body.push(
      `<text x="${num(after ? cx + 7 : cx - 7)}" y="${num(y(p.y) - 6)}"${after ? '' : ' text-anchor="end"'} fill="#333" font-size="11">${escapeXml(text)}</text>`,
    );
  }
  return svg(id, right + 90, bottom + 44, label, body);
}

/** 1, 2 or 5 times a power of ten, at least v. */
function niceCeil(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

export interface PairRow {
  label: string;
  display?: string;
  /** The two values of the row (percent, with their intervals), in the order of the chart's names. */
  values: [PairValue | null, PairValue | null];
}
export interface PairValue {
  value: number;
  low: number | null;
  high: number | null;
  title: string;
}

/** Two fills far apart in lightness, so that the pair reads in greyscale too. */
const PAIR_FILLS = ['#08306b', '#9ecae1'];

/** Two bars per row on 0-100% (dark: the first value, light: the second), each with its interval; a key above. */
export function pairedBarChart(id: string, label: string, rows: PairRow[], names: [string, string], layout: ChartLayout = {}): string {
  const left = labelMargin(
    rows.map((r) => r.display ?? r.label),
    60,
    layout.maxLabel,
  );
  const right = left + (layout.plot ?? 470);
  const rowH = 26;
  const key = keyRow(
    names.map((n, k) => ({ label: n, color: PAIR_FILLS[k] })),
    4,
    right + 12,
  );
  const top = key.height + 8;
  const x = (p: number) => left + ((right - left) * p) / 100;
  const body = [...key.marks, ...percentAxis(left, right, top, top + rows.length * rowH)];
  rows.forEach((r, i) => {
    const y = top + i * rowH;
    const name = r.display ?? r.label;
    body.push(labelText(left, y + rowH / 2 + 4, name, name === r.label ? name : `${name} (${r.label})`));
    r.values.forEach((v, k) => {
      const by = y + 3 + k * ((rowH - 6) / 2);
      const h = (rowH - 6) / 2 - 1;
      if (!v) return;
      body.push(
        `<rect class="pair" data-label="${escapeXml(r.label)}" data-key="${escapeXml(names[k])}" data-value="${v.value.toFixed(2)}" x="${left}" y="${num(by)}" width="${num(x(v.value) - left)}" height="${num(h)}" fill="${PAIR_FILLS[k]}" stroke="#222" stroke-width="0.6"><title>${escapeXml(v.title)}</title></rect>`,
      );
      if (v.low !== null && v.high !== null)
        body.push(
          `<line class="interval" x1="${num(x(v.low))}" y1="${num(by + h / 2)}" x2="${num(x(v.high))}" y2="${num(by + h / 2)}" stroke="#d55e00" stroke-width="1.2"/>`,
        );
    });
  });
  return svg(id, right + 20, top + rows.length * rowH + 24, label, body);
}
