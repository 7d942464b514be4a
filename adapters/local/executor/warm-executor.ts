/**
 * The warm local executor: each worker slot keeps one bubblewrap sandbox running
 * rcb_warm_server.py, which has imported the heavy modules (numpy, torch...) once and
 * forks a child per candidate. The child runs the test entry point through the same
 * driver as the cold executor (argv, __main__, cwd, sys.path, the paper's modules
 * imported fresh, the same rlimits and report), so verdicts are the cold executor's.
 *
 * Isolation: a slot's workspace directory is bound at /workspace of that slot's sandbox
 * only, and holds one candidate at a time. The sandbox is the cold one (same namespaces,
 * mounts, environment and user). A worker whose child leaves a process behind, overruns
 * its limit, or breaks the protocol is killed and replaced, never reused. Papers listed
 * in `coldOnly` go through a cold executor instead.
 */
import { existsSync } from 'node:fs';
import { chmod, chown, copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Candidate, ExecutionLimits, RawExecution, TestExecutor } from '../../../core/executor';
import { DEFAULT_LIMITS } from '../../../core/executor';
import { packageRoot } from '../../../core/util/package-root';
import { BaseFiles } from './base-files';
import { ColdExecutor, TEST_ENTRY_POINT, type ColdExecutorOptions } from './cold-executor';
import { parseDriverReport } from './driver-report';
import { sandboxEnvironment } from './environment';
import { probePython, type PythonInfo } from './python';
import { bwrapOptions, checkSandbox, findBwrap, missingBwrapError, SANDBOX_WORKSPACE, sandboxBaseArgs } from './sandbox';
import {
  allocateSandboxUsers,
  DEFAULT_UID_BASE,
  groupText,
  passwdText,
  runningAsRoot,
  type SandboxUser,
} from './sandbox-users';
import { SlotPool } from './slot-pool';
import { WarmWorker, type WarmHello } from './warm-worker';
import { detectPreloadModules } from './warm-preload';
import { SlotWorkspace } from './warm-workspace';

/** Where the driver and the warm server sit inside the sandbox. */
const SANDBOX_RCB_DIR = '/rcb';
const INFO_FD = 4;

export interface WarmExecutorOptions extends ColdExecutorOptions {
  /**
   * Modules every worker imports before forking, on top of those found in the papers'
   * files (see `detectPreload`). Names that are stdlib or fail to import are skipped.
   * @default []
   */
  readonly preload?: readonly string[];
  /** Find the third-party modules the papers import and preload them. @default true */
  readonly detectPreload?: boolean;
  /** Paper ids whose candidates always run cold (fresh interpreter per candidate). @default [] */
  readonly coldOnly?: readonly string[];
  /** The warm server. @default adapters/local/python/rcb_warm_server.py of this package */
  readonly serverPath?: string;
}

interface Prepared {
  runDir: string;
  rcbDir: string;
  python: PythonInfo;
  env: Record<string, string>;
  sandbox: { bwrap: string; baseArgs: string[] } | null;
  users: SandboxUser[];
}

interface Slot {
  workspace: SlotWorkspace;
  worker: WarmWorker | null;
  ready: Promise<WarmHello> | null;
}

function besideOrPackage(name: string): string {
  const beside = join(__dirname, '..', 'python', name);
  return existsSync(beside) ? beside : join(packageRoot(), 'adapters', 'local', 'python', name);
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

const EMPTY_LOG = { text: '', totalBytes: 0, truncated: false };

export class WarmExecutor implements TestExecutor {
  private readonly python: string;
  private readonly jobs: number;
  private readonly limits: ExecutionLimits;
  private readonly maxFileMb: number;
  private readonly warn: (message: string) => void;
  private readonly slotPool: SlotPool;
  private readonly slots: Slot[] = [];
  private readonly baseFiles = new BaseFiles();
  private readonly abort = new AbortController();
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly coldOnly: Set<string>;
  private preloadList: string[] | null = null;
  private prepared: Promise<Prepared> | undefined;
  private cold: ColdExecutor | undefined;
  private closed = false;
  /** What the latest worker said it preloaded (for logs and the bench). */
  lastHello: WarmHello | null = null;

  constructor(private readonly options: WarmExecutorOptions = {}) {
    this.python = options.python ?? '/usr/bin/python3';
    this.jobs = options.jobs ?? Math.max(1, cpus().length);
    if (!Number.isInteger(this.jobs) || this.jobs < 1) throw new Error(`rcb: jobs must be a positive integer, got ${this.jobs}`);
    this.limits = checkedLimits(options.limits);
    this.maxFileMb = options.maxFileMb ?? 1024;
    if (!(this.maxFileMb > 0)) throw new Error(`rcb: maxFileMb must be positive, got ${this.maxFileMb}`);
    this.warn = options.warn ?? ((message) => process.stderr.write(message + '\n'));
    this.slotPool = new SlotPool(this.jobs);
    this.coldOnly = new Set(options.coldOnly ?? []);
  }

  /** Checks the host (bubblewrap, interpreter) and sets up the run directory; workers start with the first run. */
  prepare(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('rcb: the executor is closed'));
    this.prepared ??= this.setUp();
    return this.prepared.then(() => undefined);
  }

  async run(candidates: Candidate[], onResult?: (r: RawExecution) => void | Promise<void>): Promise<RawExecution[]> {
    await this.prepare();
    const setup = await this.prepared!;
    const warm = candidates.filter((c) => !this.coldOnly.has(c.paper));
    if (warm.length > 0) this.startWorkers(setup, warm);

    const results: (RawExecution | undefined)[] = new Array(candidates.length);
    let callbackFailure: { error: unknown } | undefined;
    const deliver = async (i: number): Promise<void> => {
      if (!onResult || callbackFailure) return;
      try {
        await onResult(results[i]!);
      } catch (error) {
        callbackFailure ??= { error };
      }
    };

    const coldIndexes = candidates.map((c, i) => (this.coldOnly.has(c.paper) ? i : -1)).filter((i) => i >= 0);
    const tasks: Promise<void>[] = [];
    if (coldIndexes.length > 0) {
      this.cold ??= new ColdExecutor({ ...this.options, uidBase: (this.options.uidBase ?? DEFAULT_UID_BASE) + this.jobs });
      const cold = this.cold;
      const coldTask = (async () => {
        const coldResults = await cold.run(
          coldIndexes.map((i) => candidates[i]),
          async (r) => {
            const i = coldIndexes.find((k) => candidates[k].taskId === r.taskId && !results[k]);
            if (i === undefined) return;
            results[i] = r;
            await deliver(i);
          },
        );
        coldIndexes.forEach((k, j) => (results[k] ??= coldResults[j]));
      })();
      tasks.push(coldTask);
      this.track(coldTask);
    }

    for (let i = 0; i < candidates.length; i++) {
      if (this.coldOnly.has(candidates[i].paper)) continue;
      const slot = await this.slotPool.acquire();
      if (callbackFailure || this.closed) {
        this.slotPool.release(slot);
        break;
      }
      const task = (async () => {
        try {
          results[i] = await this.runOne(setup, candidates[i], slot);
        } finally {
          this.slotPool.release(slot);
        }
        await deliver(i);
      })();
      tasks.push(task);
      this.track(task);
    }
    await Promise.all(tasks);
    if (callbackFailure) throw callbackFailure.error;
    return candidates.map(
      (candidate, i) => results[i] ?? infraExecution(candidate, 'rcb: the executor was closed before this candidate ran', setup),
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.abort.abort();
    await Promise.allSettled([...this.inFlight]);
    await Promise.allSettled(this.slots.map((s) => s.worker?.stop()));
    await this.cold?.close();
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
    const runDir = await mkdtemp(join(this.options.tmpDir ?? tmpdir(), 'rcb-warm-'));
    try {
      await chmod(runDir, 0o711);
      // The driver and the server, private copies fixed for the run, bound read-only at /rcb.
      const rcbDir = join(runDir, 'rcb');
      await mkdir(rcbDir, { mode: 0o755 });
      await chmod(rcbDir, 0o755);
      for (const [given, name] of [
        [this.options.driverPath, 'rcb_driver.py'],
        [this.options.serverPath, 'rcb_warm_server.py'],
      ] as const) {
        await copyFile(given ?? besideOrPackage(name), join(rcbDir, name));
        await chmod(join(rcbDir, name), 0o644);
      }
      const etc = join(runDir, 'etc');
      await mkdir(etc, { mode: 0o755 });
      await writeFile(join(etc, 'passwd'), passwdText(users), { mode: 0o644 });
      await writeFile(join(etc, 'group'), groupText(users), { mode: 0o644 });

      const probeEnv = sandboxEnvironment({ allow: this.options.envAllow, warn: this.warn });
      const python = await probePython(this.python, { env: probeEnv, uid: users[0]?.uid, gid: users[0]?.gid });
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

      for (let i = 0; i < this.jobs; i++) {
        const slotDir = join(runDir, 'slots', String(i));
        const workspace = join(slotDir, 'ws');
        await mkdir(workspace, { recursive: true, mode: 0o755 });
        await chmod(join(runDir, 'slots'), 0o711);
        await chmod(slotDir, 0o711);
        if (users[i]) await chown(workspace, users[i].uid, users[i].gid);
        this.slots.push({ workspace: new SlotWorkspace(workspace, join(slotDir, 'base'), users[i]), worker: null, ready: null });
      }
      return { runDir, rcbDir, python, env, sandbox, users };
    } catch (error) {
      await rm(runDir, { recursive: true, force: true });
      throw error;
    }
  }

  /** Starts a worker in every slot that has none (or a broken one), all at once. */
  private startWorkers(setup: Prepared, candidates: Candidate[]): void {
    if (this.preloadList === null) {
      const detected = this.options.detectPreload === false ? [] : detectPreloadModules(candidates.map((c) => c.paperDir));
      this.preloadList = [...new Set([...(this.options.preload ?? []), ...detected])];
    }
    for (let i = 0; i < this.slots.length; i++) this.ensureWorker(setup, i);
  }

  private ensureWorker(setup: Prepared, index: number): Promise<WarmHello> {
    const slot = this.slots[index];
    if (slot.worker && !slot.worker.broken && slot.ready) return slot.ready;
    const old = slot.worker;
    if (old) void old.stop();
    const user = setup.users[index];
    const serverArgs = [
      setup.python.executable,
      setup.sandbox ? `${SANDBOX_RCB_DIR}/rcb_warm_server.py` : join(setup.rcbDir, 'rcb_warm_server.py'),
      ...(this.preloadList?.length ? ['--preload', this.preloadList.join(',')] : []),
      // Only the sandbox's own /tmp and /dev/shm: without a sandbox they are the host's.
      ...(setup.sandbox ? ['--scratch', '/tmp,/dev/shm'] : []),
    ];
    const worker = setup.sandbox
      ? new WarmWorker({
          command: setup.sandbox.bwrap,
          args: [
            ...setup.sandbox.baseArgs,
            '--bind',
            slot.workspace.workspace,
            SANDBOX_WORKSPACE,
            '--ro-bind',
            setup.rcbDir,
            SANDBOX_RCB_DIR,
            '--chdir',
            SANDBOX_WORKSPACE,
            '--remount-ro',
            '/',
            '--info-fd',
            String(INFO_FD),
            '--',
            ...serverArgs,
          ],
          cwd: '/',
          env: setup.env,
          uid: user?.uid,
          gid: user?.gid,
        })
      : new WarmWorker({ command: serverArgs[0], args: serverArgs.slice(1), cwd: slot.workspace.workspace, env: setup.env });
    slot.worker = worker;
    slot.ready = worker.ready.then((hello) => {
      this.lastHello = hello;
      return hello;
    });
    slot.ready.catch(() => undefined);
    return slot.ready;
  }

  /** Runs one candidate; never throws: a failure of the executor becomes `infraError`. */
  private async runOne(setup: Prepared, candidate: Candidate, index: number): Promise<RawExecution> {
    const slot = this.slots[index];
    let tampered: string[] = [];
    try {
      await this.ensureWorker(setup, index);
      const worker = slot.worker!;
      const file = await slot.workspace.fill(candidate);
      const outcome = await worker.run(
        {
          workspace: setup.sandbox ? SANDBOX_WORKSPACE : slot.workspace.workspace,
          candidate: file,
          script: TEST_ENTRY_POINT,
          timeoutSec: this.limits.timeoutSec,
          maxOutputBytes: this.limits.maxOutputBytes,
          memoryMb: this.limits.memoryMb,
          maxProcesses: this.limits.maxProcesses,
          maxFileMb: this.maxFileMb,
          logCapBytes: this.limits.logCapBytes,
        },
        this.abort.signal,
      );
      // A worker that may still have something running is gone before its files are read.
      if (outcome.workerBroken) await worker.stop();
      tampered = await this.baseFiles.tamperedFiles(candidate.paperDir, slot.workspace.workspace, file);
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
        tamperedFiles: tampered,
        sandbox: setup.sandbox ? 'bwrap' : 'none',
        executor: 'warm',
        // A worker that died under a candidate (the child may kill its server: same user)
        // is that candidate's failure, like any other death without a report.
        ...(this.closed ? { infraError: 'rcb: the executor was closed while this candidate ran' } : {}),
      };
    } catch (error) {
      return infraExecution(candidate, error instanceof Error ? error.message : String(error), setup);
    } finally {
      await slot.workspace.clean(tampered).catch((error: unknown) => {
        this.warn(`rcb: could not empty warm workspace ${slot.workspace.workspace}: ${String(error)}`);
      });
    }
  }
}

function infraExecution(candidate: Candidate, message: string, setup: Prepared): RawExecution {
  return {
    taskId: candidate.taskId,
    exitCode: null,
    signal: null,
    durationMs: 0,
    killedFor: null,
    stdout: EMPTY_LOG,
    stderr: { ...EMPTY_LOG },
    markersSeen: [],
    driver: null,
    tamperedFiles: [],
    sandbox: setup.sandbox ? 'bwrap' : 'none',
    executor: 'warm',
    infraError: message,
  };
}

/** Builds a WarmExecutor and checks the host at once, so that a missing sandbox fails before any work. */
export async function createWarmExecutor(options: WarmExecutorOptions = {}): Promise<WarmExecutor> {
  const executor = new WarmExecutor(options);
  await executor.prepare();
  return executor;
}
