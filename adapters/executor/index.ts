/** The local executors: TestExecutors that run tests on this machine, sandboxed with bubblewrap. */
import { type ColdExecutor, createColdExecutor, type ColdExecutorOptions } from './cold-executor';
import { createWarmExecutor, type WarmExecutor, type WarmExecutorOptions } from './warm-executor';

export { ColdExecutor, createColdExecutor, type ColdExecutorOptions } from './cold-executor';
export { WarmExecutor, createWarmExecutor, type WarmExecutorOptions } from './warm-executor';
export { detectPreloadModules } from './warm-preload';
export { defaultJobs } from './executor-options';

export interface LocalExecutorOptions extends ColdExecutorOptions, WarmExecutorOptions {
  /** Shorthand for `limits.timeoutSec`. @default DEFAULT_LIMITS.timeoutSec (60) */
  readonly timeoutSec?: number;
  /**
   * Use the warm pool (a forked child of a pre-imported interpreter per candidate)
   * instead of a fresh interpreter per candidate. Same sandbox and verdicts.
   * @default false
   */
  readonly warm?: boolean;
}

/**
 * The executor the CLI uses for local runs, checked and ready (throws when the host
 * cannot sandbox and `unsafeNoSandbox` is not set): the cold executor, or the warm pool
 * with `warm: true`.
 */
export function createLocalExecutor(options: LocalExecutorOptions & { warm: true }): Promise<WarmExecutor>;
export function createLocalExecutor(options?: LocalExecutorOptions): Promise<ColdExecutor | WarmExecutor>;
export function createLocalExecutor(options: LocalExecutorOptions = {}): Promise<ColdExecutor | WarmExecutor> {
  const { timeoutSec, warm, ...rest } = options;
  const merged = timeoutSec === undefined ? rest : { ...rest, limits: { ...rest.limits, timeoutSec } };
  return warm ? createWarmExecutor(merged) : createColdExecutor(merged);
}
