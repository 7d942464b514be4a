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
import { chmod, chown, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Candidate, RawExecution, TestExecutor } from '../../core/executor';
import { TEST_ENTRY } from '../../core/pset/read-pset';
import { BaseFiles } from './base-files';
import { ColdExecutor } from './cold-executor';
import { ExecutorLifecycle } from './executor-lifecycle';
import { copyPythonFiles, executorSettings, type ColdExecutorOptions, type ExecutorSettings } from './executor-options';
import { SANDBOX_RCB_DIR, SANDBOX_WORKSPACE, sandboxCommandArgs } from './sandbox';
import { prepareSandboxHost, slotEnvironment, type SandboxHost } from './sandbox-host';
import { takeFilesOfUid } from './uid-leftovers';
import { emptyDir } from './workspace';
import { SlotPool } from './slot-pool';
import { INFO_FD, WarmWorker, type WarmHello } from './warm-worker';
import { detectPreloadModules } from './warm-preload';
import { SlotWorkspace } from './warm-workspace';

export interface WarmExecutorOptions extends ColdExecutorOptions {
  /**
   * Modules every worker imports before forking, on top of those found in the papers'
   * files (see `detectPreload`). Names that fail to import are skipped.
   * @default []
   */
  readonly preload?: readonly string[];
  /** Find the modules the papers import (those announced by `expectPapers`, else the first candidates') and preload them. @default true */
  readonly detectPreload?: boolean;
  /** Paper ids whose candidates always run cold (fresh interpreter per candidate). @default [] */
  readonly coldOnly?: readonly string[];
  /** The warm server. @default adapters/executor/python/rcb_warm_server.py of this package */
  readonly serverPath?: string;
  /** Told where the time goes (the evaluation bench's breakdown); never needed to run. @default none */
  readonly trace?: (event: WarmTraceEvent) => void;
}

/**
 * Where a warm executor's time went, in ms since it was constructed (`at`) or as
 * durations: the host's set-up, each worker's start (spawn to hello: its imports), and
 * each test's steps in its slot.
 */
export type WarmTraceEvent =
  | { kind: 'setup'; at: number }
  | { kind: 'worker'; slot: number; spawnedAt: number; readyAt: number; preloaded: number; startMs: WarmHello['startMs'] }
  | {
      kind: 'test';
      slot: number;
      taskId: string;
      startedAt: number;
      endedAt: number;
      /** Waiting for the slot's worker to be ready (its start-up, or its replacement's). */
      workerMs: number;
      /** Filling the workspace (copies, links, the spliced file). */
      fillMs: number;
      /** From the request written to the done frame read: fork, the test, the relay, the server's checks. */
      runMs: number;
      /** The test process itself, fork to exit, as the server measured it. */
      testMs: number;
      /** The tamper check, and in the uid sandbox the sweep of the slot uid's files. */
      checkMs: number;
      /** Emptying the workspace (and the slot's home). */
      cleanMs: number;
    };

interface Prepared extends SandboxHost {
  rcbDir: string;
  slots: Slot[];
}

interface Slot {
  workspace: SlotWorkspace;
  worker: WarmWorker | null;
  ready: Promise<WarmHello> | null;
}

export class WarmExecutor implements TestExecutor {
  private readonly settings: ExecutorSettings;
  private readonly slotPool: SlotPool;
  /** The slots of the set-up, once it is done. */
  private slots: Slot[] = [];
  private readonly baseFiles = new BaseFiles();
  private readonly lifecycle = new ExecutorLifecycle('warm', () => this.setUp());
  private readonly coldOnly: Set<string>;
  private preloadList: string[] | null = null;
  /** Paper folders announced by `expectPapers`: what the workers preload for. */
  private readonly expected = new Set<string>();
  private cold: ColdExecutor | undefined;
  /** What the latest worker said it preloaded (for logs and the bench). */
  lastHello: WarmHello | null = null;
  private readonly born = performance.now();

  constructor(private readonly options: WarmExecutorOptions = {}) {
    this.settings = executorSettings(options);
    this.slotPool = new SlotPool(this.settings.jobs);
    this.coldOnly = new Set(options.coldOnly ?? []);
  }

  /** Checks the host (bubblewrap, interpreter) and sets up the run directory; workers start with the first run. */
  prepare(): Promise<void> {
    return this.lifecycle.prepare().then(() => undefined);
  }

  /**
   * Starts every slot's worker now, preloading what the papers in `paperDirs` import, so
   * that the first candidates find them ready (their imports take seconds).
   */
  expectPapers(paperDirs: string[]): void {
    for (const dir of paperDirs) this.expected.add(dir);
    this.lifecycle.prepare().then(
      (setup) => {
        if (!this.lifecycle.closed) this.startWorkers(setup, []);
      },
      () => undefined, // run() reports a set-up that failed
    );
  }

  async run(candidates: Candidate[], onResult?: (r: RawExecution) => void | Promise<void>): Promise<RawExecution[]> {
    const setup = await this.lifecycle.prepare();
    const coldIndexes: number[] = [];
    const warmIndexes: number[] = [];
    candidates.forEach((c, i) => (this.coldOnly.has(c.paper) ? coldIndexes : warmIndexes).push(i));
    if (warmIndexes.length > 0)
      this.startWorkers(
        setup,
        warmIndexes.map((i) => candidates[i]),
      );

    const batch = this.lifecycle.batch(setup, candidates, onResult);
    if (coldIndexes.length > 0) {
      // Its own slot users, from the same per-process block as this executor's.
      this.cold ??= new ColdExecutor(this.options);
      const cold = this.cold;
      batch.add(
        (async () => {
          const coldResults = await cold.run(
            coldIndexes.map((i) => candidates[i]),
            async (r) => {
              const i = coldIndexes.find((k) => candidates[k].taskId === r.taskId && !batch.results[k]);
              if (i === undefined) return;
              await batch.deliver(i, r);
            },
          );
          coldIndexes.forEach((k, j) => (batch.results[k] ??= coldResults[j]));
        })(),
      );
    }

    await batch.runInSlots(warmIndexes, this.slotPool, (candidate, slot) => this.runOne(setup, candidate, slot));
    return batch.finish();
  }

  close(): Promise<void> {
    return this.lifecycle.close(async () => {
      await Promise.allSettled(this.slots.map((s) => s.worker?.stop()));
      await this.cold?.close();
    });
  }

  private async setUp(): Promise<Prepared> {
    const setup = await prepareSandboxHost({
      ...this.options,
      ...this.settings,
      populate: async (runDir, users) => {
        // The driver and the server, bound read-only at /rcb.
        const rcbDir = join(runDir, 'rcb');
        await copyPythonFiles(rcbDir, {
          'rcb_driver.py': this.options.driverPath,
          'rcb_guard.py': undefined,
          'rcb_warm_server.py': this.options.serverPath,
          'rcb_contain.py': undefined,
        });
        const slotsDir = join(runDir, 'slots');
        await mkdir(slotsDir, { mode: 0o711 });
        await chmod(slotsDir, 0o711);
        const slots: Slot[] = [];
        for (let i = 0; i < this.settings.jobs; i++) {
          const slotDir = join(slotsDir, String(i));
          const workspace = join(slotDir, 'ws');
          await mkdir(workspace, { recursive: true, mode: 0o755 });
          await chmod(slotDir, 0o711);
          if (users[i]) await chown(workspace, users[i].uid, users[i].gid);
          slots.push({ workspace: new SlotWorkspace(workspace, join(slotDir, 'base'), users[i]), worker: null, ready: null });
        }
        return { rcbDir, slots };
      },
    });
    this.slots = setup.slots;
    this.options.trace?.({ kind: 'setup', at: this.since() });
    return setup;
  }

  private since(): number {
    return performance.now() - this.born;
  }

  /** Starts a worker in every slot that has none (or a broken one), all at once. */
  private startWorkers(setup: Prepared, candidates: Candidate[]): void {
    if (this.preloadList === null) {
      // The papers announced, else those of the first candidates: a worker imports once.
      const dirs = [...this.expected, ...candidates.map((c) => c.paperDir)];
      const detected = this.options.detectPreload === false ? [] : detectPreloadModules(dirs);
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
      ...(setup.sandbox ? ['--scratch', '/tmp,/dev/shm', '--contain', 'namespace'] : ['--contain', 'tree']),
      // Without a namespace the server stays root and each child drops to the slot user,
      // so a test can neither signal its supervisor nor outlive the uid sweep.
      ...(!setup.sandbox && user ? ['--uid', String(user.uid), '--gid', String(user.gid)] : []),
      ...(setup.kind === 'uid' ? ['--seccomp'] : []),
    ];
    const worker = setup.sandbox
      ? new WarmWorker({
          command: setup.sandbox.bwrap,
          args: sandboxCommandArgs(setup.sandbox.baseArgs, slot.workspace.workspace, [setup.rcbDir, SANDBOX_RCB_DIR], INFO_FD, serverArgs),
          cwd: '/',
          env: setup.env,
          uid: user?.uid,
          gid: user?.gid,
          supervisor: false,
        })
      : new WarmWorker({
          command: serverArgs[0],
          args: serverArgs.slice(1),
          cwd: slot.workspace.workspace,
          env: slotEnvironment(setup, index),
          supervisor: true,
        });
    slot.worker = worker;
    const spawnedAt = this.since();
    slot.ready = worker.ready.then((hello) => {
      this.lastHello = hello;
      this.options.trace?.({ kind: 'worker', slot: index, spawnedAt, readyAt: this.since(), preloaded: hello.preloaded.length, startMs: hello.startMs });
      return hello;
    });
    slot.ready.catch(() => undefined);
    return slot.ready;
  }

  /** Runs one candidate; never throws: a failure of the executor becomes `infraError`. */
  private async runOne(setup: Prepared, candidate: Candidate, index: number): Promise<RawExecution> {
    const { limits } = this.settings;
    const slot = this.slots[index];
    const trace = this.options.trace;
    const marks = { startedAt: this.since(), worker: 0, filled: 0, ran: 0, checked: 0, testMs: 0 };
    let tampered: string[] = [];
    try {
      await this.ensureWorker(setup, index);
      marks.worker = this.since();
      const worker = slot.worker!;
      const file = await slot.workspace.fill(candidate);
      marks.filled = this.since();
      const outcome = await worker.run(
        {
          workspace: setup.sandbox ? SANDBOX_WORKSPACE : slot.workspace.workspace,
          candidate: file,
          script: TEST_ENTRY,
          timeoutSec: limits.timeoutSec,
          maxOutputBytes: limits.maxOutputBytes,
          memoryMb: limits.memoryMb,
          maxProcesses: limits.maxProcesses,
          maxFileMb: this.settings.maxFileMb,
          logCapBytes: limits.logCapBytes,
        },
        this.lifecycle.abort.signal,
        { dirs: [slot.workspace.workspace, ...(setup.slotHomes[index] ? [setup.slotHomes[index]] : [])], maxBytes: limits.maxDiskMb * 1024 * 1024 },
      );
      marks.ran = this.since();
      marks.testMs = outcome.durationMs;
      // A worker that may still have something running is gone before its files are read.
      if (outcome.workerBroken) await worker.stop();
      tampered = await this.baseFiles.tamperedFiles(candidate.paperDir, slot.workspace.workspace, file);
      const user = setup.users[index];
      const outside = setup.kind === 'uid' && user ? await takeFilesOfUid(user.uid, [setup.runDir], setup.writableDirs, this.settings.warn) : [];
      marks.checked = this.since();
      // A worker that died under a candidate (the child may kill its server: same user)
      // is that candidate's failure, like any other death without a report.
      return this.lifecycle.finished(setup, candidate, outcome, [...tampered, ...outside]);
    } catch (error) {
      return this.lifecycle.failed(setup, candidate, error);
    } finally {
      await slot.workspace.clean(tampered).catch((error: unknown) => {
        this.settings.warn(`rcb: could not empty warm workspace ${slot.workspace.workspace}: ${String(error)}`);
      });
      const home = setup.slotHomes[index];
      if (home) await emptyDir(home).catch((error: unknown) => this.settings.warn(`rcb: could not empty ${home}: ${String(error)}`));
      if (trace && marks.checked) {
        const endedAt = this.since();
        trace({
          kind: 'test',
          slot: index,
          taskId: candidate.taskId,
          startedAt: marks.startedAt,
          endedAt,
          workerMs: marks.worker - marks.startedAt,
          fillMs: marks.filled - marks.worker,
          runMs: marks.ran - marks.filled,
          testMs: marks.testMs,
          checkMs: marks.checked - marks.ran,
          cleanMs: endedAt - marks.checked,
        });
      }
    }
  }
}

/** Builds a WarmExecutor and checks the host at once, so that a missing sandbox fails before any work. */
export async function createWarmExecutor(options: WarmExecutorOptions = {}): Promise<WarmExecutor> {
  const executor = new WarmExecutor(options);
  await executor.prepare();
  return executor;
}
