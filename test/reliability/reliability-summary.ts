/**
 * The reliability suite's one summary line. Each suite records what it counted into a
 * folder made by the global setup (RCB_RELIABILITY_DIR); the global teardown adds the
 * counts up and prints `reliability: hostile cases contained N/N, bad inputs rejected M/M,
 * crash trials recovered K/K` at the end of `npm test`. Files, not memory: suites run in
 * jest's worker processes, the teardown in the parent.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const SUMMARY_DIR_ENV = 'RCB_RELIABILITY_DIR';

/** What the summary line adds up, in its order. */
export const SUMMARY_PARTS = {
  hostile: 'hostile cases contained',
  'bad-inputs': 'bad inputs rejected',
  crash: 'crash trials recovered',
} as const;
export type SummaryPart = keyof typeof SUMMARY_PARTS;

interface Count {
  part: SummaryPart;
  passed: number;
  total: number;
}

/** Record one suite's count (`name` tells suites of one part apart, e.g. `hostile-warm`). No-op outside the global setup. */
export function recordCount(part: SummaryPart, name: string, passed: number, total: number): void {
  const dir = process.env[SUMMARY_DIR_ENV];
  if (!dir) return;
  const count: Count = { part, passed, total };
  writeFileSync(join(dir, `${name}.json`), JSON.stringify(count));
}

/** The summary line of the counts in `dir`; parts no suite recorded say so. */
export function summaryLine(dir: string): string {
  const sums = new Map<SummaryPart, { passed: number; total: number }>();
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()) {
    const c = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Count;
    const s = sums.get(c.part) ?? { passed: 0, total: 0 };
    sums.set(c.part, { passed: s.passed + c.passed, total: s.total + c.total });
  }
  const parts = (Object.keys(SUMMARY_PARTS) as SummaryPart[]).map((p) => {
    const s = sums.get(p);
    return s ? `${SUMMARY_PARTS[p]} ${s.passed}/${s.total}` : `${SUMMARY_PARTS[p]}: not run`;
  });
  return `reliability: ${parts.join(', ')}`;
}

export function makeSummaryDir(): string {
  return mkdtempSync(join(tmpdir(), 'rcb-reliability-'));
}

export function removeSummaryDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
