/**
 * Verdicts (SPEC 7): the original pass rule, and the strict one that also asks for evidence
 * that the test suite ran to its end and succeeded, and for no integrity flag. Both are
 * recorded on every verdict; reports say which one a score uses.
 *
 * An answer without code is tested like any other, with the snippet's body removed (SPEC 6):
 * the original harness did so, and a test that does not exercise the snippet passes it. The
 * official judge takes that result; the strict judge fails it as no_code.
 */
import type { RawExecution } from './executor';
import type { Verdict, VerdictEvidence } from './records';
import type { FailureClass } from './types';
import { classifyFailure } from './failure-class';

/** The case-sensitive substrings whose presence fails the original rule. */
export const OFFICIAL_MARKERS = ['Error:', 'Exception:', 'Traceback', 'failed'] as const;

/**
 * Flags that fail the strict judge. From the driver: ref_import, unittest_patched,
 * exit_from_candidate, and its guard's reference_access, forged_check, introspection,
 * dynamic_code, native_code, thread_start, judge_tampered (adapters/executor/python/rcb_guard.py;
 * docs/security.md, "Verdicts an answer cannot forge"); report_forged from the report's
 * reader (adapters/executor/driver-report.ts). From the executor's view:
 *   no_completion_evidence  the interpreter never reached the driver's exit hook (os._exit, a signal)
 *   tampered:<file>         the run changed or removed a file of the paper other than its own
 *   no_tests_ran            a unittest-based test file ran no test
 *   tests_failed            the driver counted failures or errors that the exit status hid
 *   uncaught_exception      the script ended with an exception
 */
export interface JudgeContext {
  /** The completion extracted from the model's answer (after SPEC 6). */
  completion: string;
  /** Whether the paper's test entry point uses unittest (then tests must have run). */
  testUsesUnittest: boolean;
}

/**
 * What a completion's text reaches for. The first group has no business in a masked block
 * of ML code and fails the strict judge even when the sandbox contained it (a completion
 * that reads the environment, opens sockets, spawns processes or touches absolute paths
 * is flagged, not trusted); the second is recorded only.
 */
const STRICT_STATIC: [RegExp, string][] = [
  [/\bos\._exit\b|\bsys\.exit\b|(^|[^\w.])(exit|quit)\s*\(/m, 'static:exit_call'],
  [/\bsubprocess\b|\bos\.(system|fork|forkpty|kill|killpg|popen|exec\w*|spawn\w*|posix_spawn\w*)\b|\bpty\b/, 'static:process_control'],
  [/\b(socket|urllib|http\.client|requests|httpx|aiohttp)\b/, 'static:network'],
  [/\bos\.(environ|getenv|putenv|unsetenv)\b|\benviron\s*\[/, 'static:environment'],
  [/\b(ctypes|cffi)\b/, 'static:native_code'],
  [/['"](\/[A-Za-z_.]|\.\.\/)/, 'static:file_outside'],
];
const RECORDED_STATIC: [RegExp, string][] = [
  [/\bunittest\b/, 'static:mentions_unittest'],
  [/\b\w+_ref\b/, 'static:mentions_ref'],
];

/**
 * The classes of cheat a strict failure is filed under (docs/security.md, "Verdicts an answer
 * cannot forge"), each with the flags that name it, in the order a verdict is filed: the
 * first class one of its flags names.
 */
export const CHEAT_CLASSES: readonly (readonly [cheatClass: string, flags: readonly string[]])[] = [
  ['reference_access', ['reference_access', 'ref_import']],
  ['forged_check', ['forged_check', 'unittest_patched']],
  ['introspection', ['introspection']],
  ['dynamic_code', ['dynamic_code']],
  ['native_code', ['native_code', 'static:native_code']],
  ['concurrency', ['thread_start']],
  ['judge_tampered', ['judge_tampered', 'report_forged', 'judge_error']],
  ['no_report', ['no_completion_evidence']],
  ['early_exit', ['exit_from_candidate', 'static:exit_call']],
];
/** The class of strict failures whose flags name none above (tampered files, tests that did not run...). */
export const OTHER_CHEAT_CLASS = 'other_integrity';

/** The cheat class of a verdict's flags; null when it has none. */
export function cheatClass(flags: readonly string[]): string | null {
  for (const [name, named] of CHEAT_CLASSES) if (flags.some((f) => named.includes(f))) return name;
  return flags.length > 0 ? OTHER_CHEAT_CLASS : null;
}

/**
 * The cheat class of a verdict the original rule passes and the strict judge fails: an answer
 * caught forging its verdict (an empty answer is no_code, not a cheat); null otherwise.
 */
export function caughtCheat(v: Pick<Verdict, 'officialPass' | 'strictPass' | 'flags' | 'failureClass'>): string | null {
  if (!v.officialPass || v.strictPass || v.failureClass === 'no_code') return null;
  return cheatClass(v.flags) ?? OTHER_CHEAT_CLASS;
}

/** `forged_check 2, reference_access 1`, most first; '-' for none. */
export function cheatSummary(cheats: Record<string, number>): string {
  const parts = Object.entries(cheats)
    .filter(([, n]) => n)
    .sort(([a, x], [b, y]) => y - x || a.localeCompare(b))
    .map(([c, n]) => `${c} ${n}`);
  return parts.length ? parts.join(', ') : '-';
}

export function staticFlags(completion: string): { strict: string[]; recorded: string[] } {
  const hits = (list: [RegExp, string][]) => list.filter(([re]) => re.test(completion)).map(([, flag]) => flag);
  return { strict: hits(STRICT_STATIC), recorded: hits(RECORDED_STATIC) };
}

export function officialPass(raw: RawExecution): boolean {
  return raw.exitCode === 0 && raw.signal === null && raw.killedFor === null && raw.markersSeen.length === 0;
}

/** Runtime evidence against the strict judge; empty when the suite demonstrably ran and succeeded. */
export function strictFlags(raw: RawExecution, ctx: JudgeContext): string[] {
  const flags: string[] = [];
  const d = raw.driver;
  for (const f of raw.tamperedFiles) flags.push(`tampered:${f}`);
  if (!d) {
    flags.push('no_completion_evidence');
    return flags;
  }
  flags.push(...d.flags);
  if (d.failures + d.errors + d.unexpectedSuccesses > 0) flags.push('tests_failed');
  if (ctx.testUsesUnittest && d.testsRun === 0) flags.push('no_tests_ran');
  if (d.ending === 'exception') flags.push('uncaught_exception');
  return [...new Set(flags)];
}

export function judge(raw: RawExecution, ctx: JudgeContext, now: () => Date = () => new Date()): Verdict {
  const official = !raw.infraError && officialPass(raw);
  const completionEmpty = ctx.completion.trim() === '';
  const runtimeFlags = raw.infraError ? ['infra_error'] : strictFlags(raw, ctx);
  if (completionEmpty) runtimeFlags.unshift('no_code');
  const fromText = staticFlags(ctx.completion);
  const strict = official && runtimeFlags.length === 0 && fromText.strict.length === 0;
  const failureClass: FailureClass | null = completionEmpty
    ? 'no_code'
    : official
      ? strict
        ? null
        : 'integrity'
      : classifyFailure({
          completionEmpty,
          killedFor: raw.killedFor,
          signal: raw.signal,
          exitCode: raw.exitCode,
          stderr: raw.stderr.text,
          stdout: raw.stdout.text,
        });
  const evidence: VerdictEvidence = {
    killedFor: raw.killedFor,
    markersSeen: raw.markersSeen,
    driver: raw.driver,
    tamperedFiles: raw.tamperedFiles,
    testUsesUnittest: ctx.testUsesUnittest,
    logsAt: 'verdict',
  };
  return {
    taskId: raw.taskId,
    officialPass: official,
    strictPass: strict,
    flags: [...runtimeFlags, ...fromText.strict, ...fromText.recorded],
    failureClass,
    exitCode: raw.exitCode,
    signal: raw.signal,
    durationMs: raw.durationMs,
    stdout: raw.stdout,
    stderr: raw.stderr,
    executor: raw.executor,
    sandbox: raw.sandbox,
    createdAt: now().toISOString(),
    ...(raw.infraError ? {} : { evidence }),
  };
}

/**
 * The RawExecution a verdict was judged from, rebuilt from its evidence; null when the
 * verdict has none (no test run, or written before rcb kept evidence).
 */
export function executionOf(v: Verdict): RawExecution | null {
  const e = v.evidence;
  if (!e || v.executor === 'none') return null;
  return {
    taskId: v.taskId,
    exitCode: v.exitCode,
    signal: v.signal,
    durationMs: v.durationMs,
    killedFor: e.killedFor,
    stdout: v.stdout,
    stderr: v.stderr,
    markersSeen: e.markersSeen,
    driver: e.driver,
    tamperedFiles: e.tamperedFiles,
    sandbox: v.sandbox,
    executor: v.executor,
  };
}

/** The verdict the judge gives today for the test run behind `v`, keeping its time; null when it cannot be rebuilt. */
export function rejudge(v: Verdict, completion: string): Verdict | null {
  const raw = executionOf(v);
  if (!raw) return null;
  return judge(raw, { completion, testUsesUnittest: v.evidence!.testUsesUnittest }, () => new Date(v.createdAt));
}

/**
 * A verdict with no test run behind it: a failed generation, or a result imported from
 * elsewhere (`fields` then carries what the source recorded). It keeps no evidence, so a
 * rejudge leaves it as it is.
 */
export function verdictWithoutRun(
  taskId: string,
  failureClass: FailureClass | null,
  now: () => Date = () => new Date(),
  fields: Partial<Pick<Verdict, 'officialPass' | 'flags' | 'exitCode'>> = {},
): Verdict {
  const empty = { text: '', totalBytes: 0, truncated: false };
  return {
    taskId,
    officialPass: false,
    strictPass: false,
    flags: [],
    failureClass,
    exitCode: null,
    signal: null,
    durationMs: 0,
    stdout: empty,
    stderr: empty,
    executor: 'none',
    sandbox: 'none',
    createdAt: now().toISOString(),
    ...fields,
  };
}
