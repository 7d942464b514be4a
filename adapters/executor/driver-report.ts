/**
 * Reads the report that the in-sandbox driver (adapters/executor/python/rcb_driver.py)
 * writes from its atexit hook. It crosses a process boundary from code that ran next
 * to untrusted code, so it is validated, and anything but one well-formed report counts
 * as no report at all.
 */
import { z } from 'zod';
import type { DriverReport } from '../../core/executor';

const count = z.number().int().nonnegative();

const driverReportSchema = z
  .object({
    testsRun: count,
    failures: count,
    errors: count,
    skipped: count,
    expectedFailures: count,
    unexpectedSuccesses: count,
    ending: z.enum(['return', 'exit', 'exception']),
    exitCode: z.number().int().nullable(),
    exitRaisedIn: z.string().nullable(),
    flags: z.array(z.string()),
  })
  .strict();

/** The report, or null when the text is missing, malformed or more than one report. */
export function parseDriverReport(text: string | null): DriverReport | null {
  if (text === null) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = driverReportSchema.safeParse(value);
  return parsed.success ? parsed.data : null;
}
