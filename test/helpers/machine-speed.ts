/**
 * Bounds on wall time that hold on a busy machine. A test that pins "killed at its limit"
 * or "stopped at once" must not assume an idle machine: a neighbour (a build, a browser, a
 * second suite, `npm run test:under-load`) slows every step several times over. So a bound
 * on how long a step may take is never a bare number of milliseconds; it is a multiple of a
 * reference measured on this machine, in the same test, just before: the same kind of work
 * (a sandboxed test started, run and ended), which slows down with the machine.
 */

/**
 * How many references a step may take beyond what it is waited for (a time limit). Wide,
 * because the reference and the step do not run at the same instant and load comes in
 * bursts; narrow enough that the bound still tells "killed at its 2 s limit" from "ran its
 * 60 s sleep out", which is what those tests pin.
 */
export const LOAD_SLACK = 10;

/** The bound for a step that waits `waitedMs` on purpose and then does at most `LOAD_SLACK` references of work. */
export function boundAfter(waitedMs: number, referenceMs: number, slack: number = LOAD_SLACK): number {
  if (!(referenceMs > 0)) throw new Error(`a reference time must be positive, got ${referenceMs} ms`);
  return waitedMs + slack * referenceMs;
}

/** `fn`'s result and the wall time it took. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - started };
}
