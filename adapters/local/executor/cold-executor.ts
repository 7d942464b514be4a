/**
 * The cold local executor: every candidate gets a fresh copy of its paper folder and a
 * fresh interpreter inside a bubblewrap sandbox, driven by rcb_driver.py. Nothing is
 * shared between candidates but the read-only system.
 */
import { existsSync } from 'node:fs';
import { chmod, copyFile, mkdir, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Candidate, ExecutionLimits, RawExecution, TestExecutor } from '../../../core/executor';
import { DEFAULT_LIMITS } from '../../../core/executor';
import { packageRoot } from '../../../core/util/package-root';
import { BaseFiles } from './base-files';
import { parseDriverReport } from './driver-report';
import { sandboxEnvironment } from './environment';
import { probePython, type PythonInfo } from './python';
import { createRunDir, removeStaleRunDirs } from './run-dir';
import {
  bwrapOptions,
  checkSandbox,
  findBwrap,
  missingBwrapError,
  SANDBOX_DRIVER,
  sandboxArgs,
  sandboxBaseArgs,
} from './sandbox';
import {
  allocateSandboxUsers,
  DEFAULT_UID_BASE,
  groupText,
  passwdText,
  runningAsRoot,
  type SandboxUser,
} from './sandbox-users';
import { SlotPool } from './slot-pool';
import { runTestProcess, type TestProcessSpec } from './test-process';
import { createWorkspace, removeWorkspace, splicedFilePath } from './workspace';

/** The test entry point of every paper (SPEC 1). */
export const TEST_ENTRY_POINT = 'paper2code_test.py';

/** File descriptors of the test process: the driver's report, and bwrap's info. */
const REPORT_FD = 3;
const INFO_FD = 4;

export interface ColdExecutorOptions {
  /** Interpreter the tests run with. @default '/usr/bin/python3' */
  readonly python?: string;
  /** Candidates run at once. @default os.cpus().length */
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
   * More environment variables passed to tests when set here. Names that may hold a
   * credential (*KEY*, *TOKEN*, *SECRET*, *PASSWORD*, *CREDENTIAL*, AWS_*) are refused.
   * @default []
   */
  readonly envAllow?: readonly string[];
  /** Where the executor's run directory (workspaces, driver copy) is made. @default os.tmpdir() */
  readonly tmpDir?: string;
  /** Largest file a test may write (RLIMIT_FSIZE), and the size of its /tmp and /dev/shm, MiB. @default 1024 */
  readonly maxFileMb?: number;
  /** First uid/gid of the test users when running as root, one per job. @default 200000 */
  readonly uidBase?: number;
  /** bubblewrap executable. @default the first `bwrap` on PATH, else /usr/bin/bwrap */
  readonly bwrap?: string;
  /** The in-sandbox driver. @default adapters/local/python/rcb_driver.py of this package */
  readonly driverPath?: string;
  /** Where warnings go (refused variables, unbound interpreter dirs). @default stderr */
  readonly warn?: (message: string) => void;
}

interface Prepared {
  runDir: string;
  workspaces: string;
  driver: string;
  python: PythonInfo;
  env: Record<string, string>;
  /** bwrap path and the per-executor part of its command line; null without sandbox. */
  sandbox: { bwrap: string; baseArgs: string[] } | null;
  /** One user per slot when running as root; empty otherwise. */
  users: SandboxUser[];
}

function defaultDriverPath(): string {
  const beside = join(__dirname, '..', 'python', 'rcb_driver.py');
  return existsSync(beside) ? beside : join(packageRoot(), 'adapters', 'local', 'python', 'rcb_driver.py');
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

export class ColdExecutor implements TestExecutor {
  private readonly python: string;
  private readonly jobs: number;
  private readonly limits: ExecutionLimits;
  private readonly maxFileMb: number;
  private readonly warn: (message: string) => void;
  private readonly slots: SlotPool;
  private readonly baseFiles = new BaseFiles();
  private readonly abort = new AbortController();
  private readonly inFlight = new Set<Promise<unknown>>();
  private prepared: Promise<Prepared> | undefined;
  private closed = false;

  constructor(private readonly options: ColdExecutorOptions = {}) {
    this.python = options.python ?? '/usr/bin/python3';
    this.jobs = options.jobs ?? Math.max(1, cpus().length);
    if (!Number.isInteger(this.jobs) || this.jobs < 1) throw new Error(`rcb: jobs must be a positive integer, got ${this.jobs}`);
    this.limits = checkedLimits(options.limits);
    this.maxFileMb = options.maxFileMb ?? 1024;
    if (!(this.maxFileMb > 0)) throw new Error(`rcb: maxFileMb must be positive, got ${this.maxFileMb}`);
    this.warn = options.warn ?? ((message) => process.stderr.write(message + '\n'));
    this.slots = new SlotPool(this.jobs);
  }

  /**
   * Checks the host and sets up the run directory: bubblewrap present and working, the
   * interpreter runnable as the test user. Throws with the reason when not; called by
   * `run` if not before.
   */
  prepare(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('rcb: the executor is closed'));
    this.prepared ??= this.setUp();
    return this.prepared.then(() => undefined);
  }

  async run(candidates: Candidate[], onResult?: (r: RawExecution) => void | Promise<void>): Promise<RawExecution[]> {
    await this.prepare();
    const setup = await this.prepared!;
    const results: (RawExecution | undefined)[] = new Array(candidates.length);
    let callbackFailure: { error: unknown } | undefined;
    const tasks: Promise<void>[] = [];

    for (let i = 0; i < candidates.length; i++) {
      const slot = await this.slots.acquire();
      if (callbackFailure || this.closed) {
        this.slots.release(slot);
        break;
      }
      const task = (async () => {
        try {
          results[i] = await this.runOne(setup, candidates[i], slot);
        } finally {
          this.slots.release(slot);
        }
        if (onResult && !callbackFailure) {
          try {
            await onResult(results[i]!);
          } catch (error) {
            // The caller could not take the result (say, saving it failed): start no more.
            callbackFailure ??= { error };
          }
        }
      })();
      tasks.push(task);
      this.track(task);
    }
    await Promise.all(tasks);
    if (callbackFailure) throw callbackFailure.error;
    return candidates.map(
      (candidate, i) => results[i] ?? infraExecution(candidate, 'rcb: the executor was closed before this candidate ran', setup, 0),
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.abort.abort();
    await Promise.allSettled([...this.inFlight]);
    const setup = await this.prepared?.catch(() => undefined);
    if (setup) await rm(setup.runDir, { recursive: true, force: true });
  }

  private track(promise: Promise<unknown>): void {
    this.inFlight.add(promise);
    void promise.finally(() => this.inFlight.delete(promise)).catch(() => undefined);
  }

  private async setUp(): Promise<Prepared> {
    const bwrap = this.options.unsafeNoSandbox ? null : findBwrap(this.options.bwrap);
    if (!bwrap && !this.options.unsafeNoSandbox) throw missingBwrapError();
    if (!bwrap) this.warn('rcb: running tests WITHOUT a sandbox (unsafeNoSandbox): generated code can reach your files and network');

    const users = runningAsRoot() ? allocateSandboxUsers(this.jobs, this.options.uidBase ?? DEFAULT_UID_BASE) : [];
    const parent = this.options.tmpDir ?? tmpdir();
    await removeStaleRunDirs(parent).catch(() => undefined);
    const runDir = await createRunDir(parent);
    try {
      const workspaces = join(runDir, 'ws');
      await mkdir(workspaces, { mode: 0o711 });
      await chmod(workspaces, 0o711);
      // A private copy of the driver: readable by the test users, and fixed for the run.
      const driverDir = join(runDir, 'driver');
      await mkdir(driverDir, { mode: 0o755 });
      const driver = join(driverDir, 'rcb_driver.py');
      await copyFile(this.options.driverPath ?? defaultDriverPath(), driver);
      await chmod(driver, 0o644);
      const etc = join(runDir, 'etc');
      await mkdir(etc, { mode: 0o755 });
      await writeFile(join(etc, 'passwd'), passwdText(users), { mode: 0o644 });
      await writeFile(join(etc, 'group'), groupText(users), { mode: 0o644 });

      const probeEnv = sandboxEnvironment({ allow: this.options.envAllow, warn: this.warn });
      const python = await probePython(this.python, { env: probeEnv, uid: users[0]?.uid, gid: users[0]?.gid }).catch(
        (error: Error) => {
          if (!users[0]) throw error;
          throw new Error(
            `${error.message} (tests run as the unprivileged uid ${users[0].uid}, so the interpreter and its ` +
              'libraries must be readable by every user: not under /root, say)',
          );
        },
      );
      const env = sandboxEnvironment({ allow: this.options.envAllow, interpreterDir: dirname(python.executable) });

      let sandbox: Prepared['sandbox'] = null;
      if (bwrap) {
        const baseArgs = sandboxBaseArgs({
          bwrapOptions: await bwrapOptions(bwrap),
          python,
          env,
          passwdFile: join(etc, 'passwd'),
          groupFile: join(etc, 'group'),
          tmpfsBytes: this.maxFileMb * 1024 * 1024,
          runDir,
          warn: this.warn,
        });
        await checkSandbox(bwrap, baseArgs, users[0]);
        sandbox = { bwrap, baseArgs };
      }
      return { runDir, workspaces, driver, python, env, sandbox, users };
    } catch (error) {
      await rm(runDir, { recursive: true, force: true });
      throw error;
    }
  }

  /** Runs one candidate; never throws: a failure of the executor becomes `infraError`. */
  private async runOne(setup: Prepared, candidate: Candidate, slot: number): Promise<RawExecution> {
    const user = setup.users[slot];
    let workspace: string | undefined;
    try {
      const file = splicedFilePath(candidate);
      workspace = await createWorkspace(setup.workspaces, candidate, user);
      const driverArgs = [
        '--report-fd',
        String(REPORT_FD),
        '--candidate',
        file,
        '--memory-mb',
        String(this.limits.memoryMb),
        '--max-processes',
        String(this.limits.maxProcesses),
        '--max-file-mb',
        String(this.maxFileMb),
        TEST_ENTRY_POINT,
      ];
      const common = { env: setup.env, uid: user?.uid, gid: user?.gid, reportFd: REPORT_FD };
      const spec: TestProcessSpec = setup.sandbox
        ? {
            ...common,
            command: setup.sandbox.bwrap,
            args: sandboxArgs(setup.sandbox.baseArgs, workspace, setup.driver, INFO_FD, [
              setup.python.executable,
              SANDBOX_DRIVER,
              ...driverArgs,
            ]),
            cwd: '/',
            infoFd: INFO_FD,
          }
        : { ...common, command: setup.python.executable, args: [setup.driver, ...driverArgs], cwd: workspace };
      const outcome = await runTestProcess(spec, this.limits, this.abort.signal);
      const tamperedFiles = await this.baseFiles.tamperedFiles(candidate.paperDir, workspace, file);
      return {
        taskId: candidate.taskId,
        exitCode: outcome.exitCode,
        signal: outcome.signal,
        durationMs: outcome.durationMs,
        killedFor: outcome.killedFor,
        stdout: outcome.stdout,
        stderr: outcome.stderr,
        markersSeen: outcome.markersSeen,
        driver: parseDriverReport(outcome.report),
        tamperedFiles,
        sandbox: setup.sandbox ? 'bwrap' : 'none',
        executor: 'cold',
        ...(this.closed ? { infraError: 'rcb: the executor was closed while this candidate ran' } : {}),
      };
    } catch (error) {
      return infraExecution(candidate, error instanceof Error ? error.message : String(error), setup);
    } finally {
      if (workspace) {
        await removeWorkspace(workspace).catch((error: unknown) =>
          this.warn(`rcb: could not remove workspace ${workspace}: ${String(error)}`),
        );
      }
    }
  }
}

function infraExecution(candidate: Candidate, message: string, setup: Prepared, durationMs = 0): RawExecution {
  const empty = { text: '', totalBytes: 0, truncated: false };
  return {
    taskId: candidate.taskId,
    exitCode: null,
    signal: null,
    durationMs,
    killedFor: null,
    stdout: empty,
    stderr: { ...empty },
    markersSeen: [],
    driver: null,
    tamperedFiles: [],
    sandbox: setup.sandbox ? 'bwrap' : 'none',
    executor: 'cold',
    infraError: message,
  };
}

/** Builds a ColdExecutor and checks the host at once, so that a missing sandbox fails before any work. */
export async function createColdExecutor(options: ColdExecutorOptions = {}): Promise<ColdExecutor> {
  const executor = new ColdExecutor(options);
  await executor.prepare();
  return executor;
}
