/**
 * The cold local executor: every candidate gets a fresh copy of its paper folder and a
 * fresh interpreter inside a bubblewrap sandbox, driven by rcb_driver.py. Nothing is
 * shared between candidates but the read-only system.
 */
import { chmod, mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Candidate, RawExecution, TestExecutor } from '../../core/executor';
import { TEST_ENTRY } from '../../core/pset/read-pset';
import { BaseFiles } from './base-files';
import { ExecutorLifecycle } from './executor-lifecycle';
import { copyPythonFiles, executorSettings, type ColdExecutorOptions, type ExecutorSettings } from './executor-options';
import { SANDBOX_DRIVER, sandboxArgs } from './sandbox';
import { prepareSandboxHost, slotEnvironment, type SandboxHost } from './sandbox-host';
import { takeFilesOfUid } from './uid-leftovers';
import { SlotPool } from './slot-pool';
import { runTestProcess, type TestProcessSpec } from './test-process';
import { createWorkspace, emptyDir, removeTree, splicedFilePath } from './workspace';

export type { ColdExecutorOptions } from './executor-options';

/** File descriptors of the test process: the driver's report, and bwrap's info. */
const REPORT_FD = 3;
const INFO_FD = 4;

interface Prepared extends SandboxHost {
  workspaces: string;
  driver: string;
}

export class ColdExecutor implements TestExecutor {
  private readonly settings: ExecutorSettings;
  private readonly slots: SlotPool;
  private readonly baseFiles = new BaseFiles();
  private readonly lifecycle = new ExecutorLifecycle('cold', () => this.setUp());

  constructor(private readonly options: ColdExecutorOptions = {}) {
    this.settings = executorSettings(options);
    this.slots = new SlotPool(this.settings.jobs);
  }

  /**
   * Checks the host and sets up the run directory: bubblewrap present and working, the
   * interpreter runnable as the test user. Throws with the reason when not; called by
   * `run` if not before.
   */
  prepare(): Promise<void> {
    return this.lifecycle.prepare().then(() => undefined);
  }

  async run(candidates: Candidate[], onResult?: (r: RawExecution) => void | Promise<void>): Promise<RawExecution[]> {
    const setup = await this.lifecycle.prepare();
    const batch = this.lifecycle.batch(setup, candidates, onResult);
    await batch.runInSlots(candidates.keys(), this.slots, (candidate, slot) => this.runOne(setup, candidate, slot));
    return batch.finish();
  }

  close(): Promise<void> {
    return this.lifecycle.close();
  }

  private setUp(): Promise<Prepared> {
    return prepareSandboxHost({
      ...this.options,
      ...this.settings,
      populate: async (runDir) => {
        const workspaces = join(runDir, 'ws');
        await mkdir(workspaces, { mode: 0o711 });
        await chmod(workspaces, 0o711);
        const driverDir = join(runDir, 'driver');
        await copyPythonFiles(driverDir, { 'rcb_driver.py': this.options.driverPath, 'rcb_guard.py': undefined, 'rcb_contain.py': undefined });
        return { workspaces, driver: join(driverDir, 'rcb_driver.py') };
      },
    });
  }

  /** Runs one candidate; never throws: a failure of the executor becomes `infraError`. */
  private async runOne(setup: Prepared, candidate: Candidate, slot: number): Promise<RawExecution> {
    const { limits, maxFileMb } = this.settings;
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
        String(limits.memoryMb),
        '--max-processes',
        String(limits.maxProcesses),
        '--max-file-mb',
        String(maxFileMb),
        TEST_ENTRY,
      ];
      const common = { env: slotEnvironment(setup, slot), uid: user?.uid, gid: user?.gid, reportFd: REPORT_FD };
      const spec: TestProcessSpec = setup.sandbox
        ? {
            ...common,
            command: setup.sandbox.bwrap,
            args: sandboxArgs(setup.sandbox.baseArgs, workspace, setup.driver, INFO_FD, [setup.python.executable, SANDBOX_DRIVER, ...driverArgs]),
            cwd: '/',
            infoFd: INFO_FD,
          }
        : {
            // No pid namespace: rcb_contain.py supervises the test and ends all it started
            // (as root it runs the test as the slot user and ends that uid's processes too;
            // in the uid sandbox under its seccomp filter).
            ...common,
            uid: undefined,
            gid: undefined,
            command: setup.python.executable,
            args: [
              join(dirname(setup.driver), 'rcb_contain.py'),
              ...(user ? ['--uid', String(user.uid), '--gid', String(user.gid)] : []),
              ...(setup.kind === 'uid' ? ['--seccomp'] : []),
              '--status-fd',
              String(INFO_FD),
              '--',
              setup.python.executable,
              setup.driver,
              ...driverArgs,
            ],
            cwd: workspace,
            infoFd: INFO_FD,
            supervisor: true,
          };
      const home = setup.slotHomes[slot];
      const disk = { dirs: home ? [workspace, home] : [workspace], maxBytes: limits.maxDiskMb * 1024 * 1024 };
      const outcome = await runTestProcess(spec, { ...limits, disk }, this.lifecycle.abort.signal);
      const tamperedFiles = await this.baseFiles.tamperedFiles(candidate.paperDir, workspace, file);
      if (setup.kind === 'uid' && user) tamperedFiles.push(...(await takeFilesOfUid(user.uid, [setup.runDir], setup.writableDirs, this.settings.warn)));
      return this.lifecycle.finished(setup, candidate, outcome, tamperedFiles);
    } catch (error) {
      return this.lifecycle.failed(setup, candidate, error);
    } finally {
      if (workspace) {
        await removeTree(workspace).catch((error: unknown) => this.settings.warn(`rcb: could not remove workspace ${workspace}: ${String(error)}`));
      }
      const home = setup.slotHomes[slot];
      if (home) await emptyDir(home).catch((error: unknown) => this.settings.warn(`rcb: could not empty ${home}: ${String(error)}`));
    }
  }
}

/** Builds a ColdExecutor and checks the host at once, so that a missing sandbox fails before any work. */
export async function createColdExecutor(options: ColdExecutorOptions = {}): Promise<ColdExecutor> {
  const executor = new ColdExecutor(options);
  await executor.prepare();
  return executor;
}
