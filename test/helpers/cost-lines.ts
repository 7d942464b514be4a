/**
 * A report with its cost lines set apart: the scores of a cloud run and of the same run made
 * locally must agree line for line, while their cost lines differ by design (the cloud's
 * infrastructure is estimated from its recorded shards, a local run's is "local ($0)").
 * Tests compare `scores` and check `cost` on its own.
 */
import { COST_CSV_COLUMNS, COST_TITLE } from '../../core/report/run-cost';

export interface SplitReport {
  /** The report without its cost lines (table: the cost block; csv: the cost columns). */
  scores: string;
  /** The cost block (table) or the cost columns' header and cells (csv), as printed. */
  cost: string;
}

/** A table (the leaderboard) split at its cost block: `cost (...)` down to its `infrastructure:` line. */
export function splitTableCost(text: string): SplitReport {
  const lines = text.split('\n');
  const start = lines.indexOf(`${COST_TITLE}:`);
  if (start < 0) return { scores: text, cost: '' };
  let end = start;
  while (end < lines.length && !lines[end].startsWith('infrastructure: ')) end++;
  // The blank line before the block goes with it.
  const from = start > 0 && lines[start - 1] === '' ? start - 1 : start;
  return { scores: [...lines.slice(0, from), ...lines.slice(end + 1)].join('\n'), cost: lines.slice(start, end + 1).join('\n') };
}

/** Cells of one CSV line, commas inside quotes kept. */
function cells(line: string): string[] {
  const out: string[] = [];
  let cell = '';
  let quoted = false;
  for (const ch of line) {
    if (ch === '"') quoted = !quoted;
    if (ch === ',' && !quoted) {
      out.push(cell);
      cell = '';
    } else cell += ch;
  }
  out.push(cell);
  return out;
}

/** A CSV report split into its columns but the cost ones, and the cost columns. */
export function splitCsvCost(text: string): SplitReport {
  const lines = text.split('\n');
  const header = cells(lines[0]);
  const costAt = new Set(COST_CSV_COLUMNS.map((c) => header.indexOf(c)).filter((i) => i >= 0));
  const keep = (row: string[], cost: boolean) => row.filter((_, i) => costAt.has(i) === cost).join(',');
  const rows = lines.map((l) => (l === '' ? null : cells(l)));
  return {
    scores: rows.map((r) => (r ? keep(r, false) : '')).join('\n'),
    cost: rows.map((r) => (r ? keep(r, true) : '')).join('\n'),
  };
}

/**
 * A cloud run's leaderboard against the same run made locally: the same scores, line for line;
 * the cloud's infrastructure priced from its recorded shards, the local one's "local ($0)".
 */
export function expectCloudBoardLikeLocal(cloud: string, local: string): void {
  const c = splitTableCost(cloud);
  const l = splitTableCost(local);
  expect(c.scores).toBe(l.scores);
  expect(c.cost).toMatch(/infrastructure: cloud run: estimated from \d+ recorded shard/);
  expect(l.cost).toMatch(/infrastructure: local run/);
}
