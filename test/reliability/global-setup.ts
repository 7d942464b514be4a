/** Jest global setup: the folder where suites record their counts for the summary line. */
import { makeSummaryDir, SUMMARY_DIR_ENV } from './reliability-summary';

export default function globalSetup(): void {
  // Set before jest starts its workers, so every suite inherits it.
  process.env[SUMMARY_DIR_ENV] = makeSummaryDir();
}
