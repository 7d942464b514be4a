/** The local executors: TestExecutors that run tests on this machine, sandboxed with bubblewrap. */
import { ColdExecutor, createColdExecutor, type ColdExecutorOptions } from './cold-executor';

export { ColdExecutor, createColdExecutor, TEST_ENTRY_POINT, type ColdExecutorOptions } from './cold-executor';
export { ERROR_MARKERS, type ErrorMarker } from './capped-log';

export interface LocalExecutorOptions extends ColdExecutorOptions {
  /** Shorthand for `limits.timeoutSec`. @default DEFAULT_LIMITS.timeoutSec (60) */
  readonly timeoutSec?: number;
}

/**
 * The executor the CLI uses for local runs, checked and ready (throws when the host
 * cannot sandbox and `unsafeNoSandbox` is not set). Today the cold executor.
 */
export function createLocalExecutor(options: LocalExecutorOptions = {}): Promise<ColdExecutor> {
  const { timeoutSec, ...rest } = options;
  return createColdExecutor(timeoutSec === undefined ? rest : { ...rest, limits: { ...rest.limits, timeoutSec } });
}
