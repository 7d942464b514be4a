/**
 * The TestExecutor port: candidates in, raw executions out. The executor runs a paper's
 * own test entry point against a spliced file inside a sandbox; it never decides a
 * verdict. `judge()` (core/judge.ts) reads a RawExecution and decides.
 */
import type { CappedLog } from './types';

/** One candidate: a completion spliced into its annotated file, ready to test. */
export interface Candidate {
  taskId: string;
  paper: string;
  /** Absolute path of the paper folder in the pset: the pristine base, never written. */
  paperDir: string;
  /** Annotated file, relative to the paper folder. */
  file: string;
  /** Whole text of that file with the completion spliced in (SPEC 7). */
  source: string;
}

/** Limits applied to every test process. */
export interface ExecutionLimits {
  /** Wall-clock limit of one test run, seconds (SPEC 7 default 60). */
  timeoutSec: number;
  /** Address-space limit of the test process, MiB. */
  memoryMb: number;
  /** Most processes/threads the test may run at once. */
  maxProcesses: number;
  /** Output (stdout + stderr) after which the process is killed, bytes. */
  maxOutputBytes: number;
  /** Bytes of each stream kept in the verdict (head and tail). */
  logCapBytes: number;
  /**
   * Disk the test may fill in its workspace (and slot home), MiB, over the paper's own files:
   * past it the test is killed (killedFor 'disk', class resource; adapters/executor/disk-cap.ts).
   */
  maxDiskMb: number;
}

export const DEFAULT_LIMITS: ExecutionLimits = {
  timeoutSec: 60,
  // Address space, not resident memory: torch, tensorflow and jax reserve virtual memory
  // they never touch, and advantage-alignment's test (torch + torchrl + meltingpot's
  // tensorflow) fails to import at 4096 (ENOMEM) though it passes at 6144.
  memoryMb: 8192,
  maxProcesses: 256,
  maxOutputBytes: 16 * 1024 * 1024,
  logCapBytes: 64 * 1024,
  maxDiskMb: 4096,
};

/**
 * What the in-sandbox driver (adapters/executor/python/rcb_driver.py) reports from its atexit
 * hook. Absent when the process never reached it (os._exit, a signal, a kill).
 */
export interface DriverReport {
  /** unittest counters, taken from the driver's own wrapper around TestCase.run. */
  testsRun: number;
  failures: number;
  errors: number;
  skipped: number;
  expectedFailures: number;
  unexpectedSuccesses: number;
  /** How the test script ended. */
  ending: 'return' | 'exit' | 'exception';
  /** The SystemExit code when ending is 'exit' (null code counts as 0). */
  exitCode: number | null;
  /** Workspace-relative file in which SystemExit was raised, when it was. */
  exitRaisedIn: string | null;
  /** Integrity flags raised inside the process (see STRICT_FLAGS in core/judge.ts). */
  flags: string[];
}

/** Everything the executor observed of one test run. */
export interface RawExecution {
  taskId: string;
  exitCode: number | null;
  signal: string | null;
  durationMs: number;
  /** Why the executor stopped the process, if it did. */
  killedFor: 'timeout' | 'output' | 'disk' | null;
  stdout: CappedLog;
  stderr: CappedLog;
  /**
   * Which of the SPEC 7 error markers (`Error:`, `Exception:`, `Traceback`, `failed`)
   * occur anywhere in the full stdout or stderr, including parts cut from the kept logs.
   */
  markersSeen: string[];
  driver: DriverReport | null;
  /**
   * Base files (relative to the paper folder) that the run changed or removed; in the uid
   * sandbox also files it left outside (absolute paths, see uid-leftovers.ts).
   */
  tamperedFiles: string[];
  sandbox: 'bwrap' | 'uid' | 'none';
  executor: 'cold' | 'warm';
  /** Set when the executor itself failed: the run is not a verdict on the candidate. */
  infraError?: string;
}

export interface TestExecutor {
  /**
   * Run candidates (any papers, any order); resolves with one RawExecution per candidate.
   * `onResult` is called as each one finishes, so progress can be shown and results saved
   * before the batch ends.
   */
  run(candidates: Candidate[], onResult?: (r: RawExecution) => void | Promise<void>): Promise<RawExecution[]>;
  /**
   * Says which papers' candidates will come (their folders), before the first one does: an
   * executor may start its workers and import what these papers' tests need at once,
   * while the answers are still being generated. Never required before `run`.
   */
  expectPapers?(paperDirs: string[]): void;
  /** Release workers and temporary files. */
  close(): Promise<void>;
}
