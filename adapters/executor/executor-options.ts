/**
 * The options both local executors take, and their defaults: one place that reads them,
 * so that the cold and the warm executor agree on what an option means.
 */
import { existsSync } from 'node:fs';
import { chmod, copyFile, mkdir } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { ExecutionLimits } from '../../core/executor';
import { DEFAULT_LIMITS } from '../../core/executor';
import { packageRoot } from '../../core/util/package-root';

/** The sandbox asked for (see ColdExecutorOptions.sandbox). */
export type SandboxMode = 'auto' | 'bwrap' | 'uid' | 'none';
export const SANDBOX_MODES: readonly SandboxMode[] = ['auto', 'bwrap', 'uid', 'none'];

/** Reads a sandbox mode given as text (a flag, an environment variable), naming `source` on error. */
export function parseSandboxMode(value: string, source: string): SandboxMode {
  if ((SANDBOX_MODES as readonly string[]).includes(value)) return value as SandboxMode;
  throw new Error(`rcb: ${source} must be one of ${SANDBOX_MODES.join(', ')} (got ${JSON.stringify(value)})`);
}

export interface ColdExecutorOptions {
  /** Interpreter the tests run with. @default '/usr/bin/python3' */
  readonly python?: string;
  /** Candidates run at once. @default defaultJobs() */
  readonly jobs?: number;
  /** Limits of every test run; missing members take the default. @default DEFAULT_LIMITS */
  readonly limits?: Partial<ExecutionLimits>;
  /**
   * Run tests without bubblewrap: no namespaces, no mount isolation, no network
   * isolation; only the environment allow-list, rlimits and the process-group kill.
   * @default false
   */
  readonly unsafeNoSandbox?: boolean;
  /**
   * How tests are isolated: `bwrap` (bubblewrap: namespaces, an empty root, no network);
   * `uid` (no namespaces, for hosts that refuse them such as Fargate: rcb runs as root and
   * each slot's tests as a uid of their own under a seccomp filter; see uid-sandbox.md in
   * docs/security.md); `none` (the same as unsafeNoSandbox); `auto`: bwrap where
   * it can start, else uid when rcb runs as root, else an error naming both.
   * @default 'auto' ('none' when unsafeNoSandbox is set)
   */
  readonly sandbox?: SandboxMode;
  /**
   * More environment variables passed to tests when set here. Names that may hold a
   * credential (*KEY*, *TOKEN*, *SECRET*, *PASSWORD*, *CREDENTIAL*, AWS_*) are refused.
   * @default []
   */
  readonly envAllow?: readonly string[];
  /** Where the executor's run directory (workspaces, driver copy) is made. @default os.tmpdir() */
  readonly tmpDir?: string;
  /** Largest file a test may write (RLIMIT_FSIZE), and the size of its /tmp and /dev/shm, MiB. @default 1024 */
  readonly maxFileMb?: number;
  /** bubblewrap executable. @default the first `bwrap` on PATH, else /usr/bin/bwrap */
  readonly bwrap?: string;
  /** The in-sandbox driver. @default adapters/executor/python/rcb_driver.py of this package */
  readonly driverPath?: string;
  /** Where warnings go (refused variables, unbound interpreter dirs). @default stderr */
  readonly warn?: (message: string) => void;
}

/**
 * Tests run at once when the caller does not say: one per core this process may run on
 * (affinity, as in a container). Measured on the 9 real papers on 2 cores (warm executor,
 * `npm run bench -- evaluation --preset debian9 --jobs N`, medians of 3 interleaved rounds,
 * load average 4-7): 1 job 7.7 s, 2 jobs 5.5 s, 3 jobs 5.8 s. The second job helps although
 * each test runs slower when two share the cores; a third only adds a worker's start-up.
 */
export function defaultJobs(): number {
  return Math.max(1, availableParallelism());
}

/** The members of ColdExecutorOptions every executor needs, checked and with their defaults. */
export interface ExecutorSettings {
  readonly python: string;
  readonly jobs: number;
  readonly limits: ExecutionLimits;
  readonly maxFileMb: number;
  readonly warn: (message: string) => void;
}

/** Reads the common options; throws on a value no executor can work with. */
export function executorSettings(options: ColdExecutorOptions): ExecutorSettings {
  const python = options.python ?? '/usr/bin/python3';
  const jobs = options.jobs ?? defaultJobs();
  if (!Number.isInteger(jobs) || jobs < 1) throw new Error(`rcb: jobs must be a positive integer, got ${jobs}`);
  const limits = checkedLimits(options.limits);
  const maxFileMb = options.maxFileMb ?? 1024;
  if (!(maxFileMb > 0)) throw new Error(`rcb: maxFileMb must be positive, got ${maxFileMb}`);
  const warn = options.warn ?? ((message: string) => process.stderr.write(`${message}\n`));
  return { python, jobs, limits, maxFileMb, warn };
}

function checkedLimits(limits: Partial<ExecutionLimits> | undefined): ExecutionLimits {
  const merged = { ...DEFAULT_LIMITS, ...limits };
  for (const [name, value] of Object.entries(merged)) {
    if (!(typeof value === 'number' && Number.isFinite(value) && value > 0)) {
      throw new Error(`rcb: execution limit ${name} must be a positive number, got ${String(value)}`);
    }
  }
  return merged;
}

/** A file of adapters/executor/python: beside the compiled code, else in the package. */
export function bundledPythonFile(name: string): string {
  const beside = join(__dirname, '..', 'python', name);
  return existsSync(beside) ? beside : join(packageRoot(), 'adapters', 'executor', 'python', name);
}

/**
 * Makes `dir` and puts private copies of rcb's Python files there, readable by the test
 * users and fixed for the run: each file the path given for it, else the bundled one.
 */
export async function copyPythonFiles(dir: string, files: Record<string, string | undefined>): Promise<void> {
  await mkdir(dir, { mode: 0o755 });
  await chmod(dir, 0o755);
  for (const [name, given] of Object.entries(files)) {
    await copyFile(given ?? bundledPythonFile(name), join(dir, name));
    await chmod(join(dir, name), 0o644);
  }
}
