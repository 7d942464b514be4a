/**
 * Reads the report that the in-sandbox driver (adapters/executor/python/rcb_driver.py and
 * its guard, rcb_guard.py) writes to its report fd. It crosses a process boundary from code
 * that ran next to untrusted code, so it is validated: JSON lines, a `start` line with the
 * run's nonce written before any test code ran, `flag` and `count` lines as they happened,
 * and one `end` line carrying the same nonce. A flag once written stands, whatever comes
 * after; a line that is none of these, or a second or unsigned end, is the answer writing
 * to the fd and raises `report_forged`. Without a signed end there is no report at all.
 * See docs/security.md, "Verdicts an answer cannot forge".
 */
import { z } from 'zod';
import type { DriverReport } from '../../core/executor';

const count = z.number().int().nonnegative();

const endSchema = z
  .object({
    end: z.string(),
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
const flagSchema = z.object({ flag: z.string().max(200) }).strict();
const countSchema = z.object({ count: z.array(count).length(6) }).strict();
const startSchema = z.object({ start: z.string().min(16) }).strict();

/** The flag raised when the report fd carried lines the driver did not write. */
export const REPORT_FORGED = 'report_forged';

function parseLine(line: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}

/** The report, or null when the text is missing, does not start with the driver's nonce, or has no end signed with it. */
export function parseDriverReport(text: string | null): DriverReport | null {
  if (text === null) return null;
  const lines = text.split('\n').filter((l) => l !== '');
  const start = startSchema.safeParse(parseLine(lines[0] ?? ''));
  if (!start.success) return null;
  const nonce = start.data.start;
  const flags = new Set<string>();
  let end: z.infer<typeof endSchema> | null = null;
  for (const line of lines.slice(1)) {
    const value = parseLine(line);
    const asFlag = flagSchema.safeParse(value);
    if (asFlag.success) {
      flags.add(asFlag.data.flag);
      continue;
    }
    if (countSchema.safeParse(value).success) continue;
    const asEnd = endSchema.safeParse(value);
    if (asEnd.success && asEnd.data.end === nonce && end === null) end = asEnd.data;
    else flags.add(REPORT_FORGED);
  }
  if (end === null) return null;
  const { end: _nonce, flags: endFlags, ...counts } = end;
  return { ...counts, flags: [...new Set([...endFlags, ...flags])].sort() };
}
