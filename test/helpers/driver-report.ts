/** Driver reports (DriverReport of core/executor.ts) as tests expect or feed them. */
import type { DriverReport } from '../../core/executor';

/** The report of a unittest suite that ran `testsRun` tests, all passed, and ended with sys.exit(0) from the test file. */
export function passedSuiteReport(testsRun: number, over: Partial<DriverReport> = {}): DriverReport {
  return {
    testsRun,
    failures: 0,
    errors: 0,
    skipped: 0,
    expectedFailures: 0,
    unexpectedSuccesses: 0,
    ending: 'exit',
    exitCode: 0,
    exitRaisedIn: 'paper2code_test.py',
    flags: [],
    ...over,
  };
}
