/** Jest global teardown: print the reliability summary line (when any suite recorded a count) and clean up. */
import { readdirSync } from 'node:fs';
import { removeSummaryDir, summaryLine, SUMMARY_DIR_ENV } from './reliability-summary';

export default function globalTeardown(): void {
  const dir = process.env[SUMMARY_DIR_ENV];
  if (!dir) return;
  if (readdirSync(dir).length) process.stdout.write(`\n${summaryLine(dir)}\n`);
  removeSummaryDir(dir);
}
