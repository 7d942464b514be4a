/**
 * Runs one test process and watches it: wall-clock limit, output limit, capped logs,
 * the driver's report pipe, and the kill that leaves no process behind.
 */
import type { Readable } from 'node:stream';
import type { StreamCapture } from './capped-log';
import { DiskCap } from './disk-cap';
import { OutputCapture, ProcessEnder, SandboxInfo, spawnGroup, type CapturedOutput, type ProcessSpawn } from './child-process';

/** How long to wait for the pipes to close once the process has exited and been killed. */
const PIPE_GRACE_MS = 2_000;

export interface TestProcessSpec extends ProcessSpawn {
  /** The child's fd where the driver writes its report. */
  reportFd: number;
  /**
   * The child's fd where bwrap writes `{"child-pid": N}`: the sandbox's init, whose
   * death ends every process in the sandbox before bwrap itself exits. For a supervisor,
   * its --status-fd: the test's end, after which the time limit no longer runs.
   */
  infoFd?: number;
  /**
   * The process is a supervisor (rcb_contain.py) that ends what the test started on
   * SIGTERM and when the test ends; without it, it is bwrap.
   */
  supervisor?: boolean;
}

export interface TestProcessLimits {
  timeoutSec: number;
  maxOutputBytes: number;
  logCapBytes: number;
  /** Folders the test writes, measured while it runs, and the bytes it may add there (disk-cap.ts). */
  disk?: { dirs: readonly string[]; maxBytes: number };
}

export interface TestProcessOutcome extends CapturedOutput {
  exitCode: number | null;
  signal: string | null;
  durationMs: number;
  killedFor: 'timeout' | 'output' | 'disk' | null;
}

/**
 * Spawns the process in its own process group and resolves once it has exited and its
 * pipes are closed. Rejects only when it cannot be started at all. `abort` kills it.
 */
export function runTestProcess(spec: TestProcessSpec, limits: TestProcessLimits, abort?: AbortSignal): Promise<TestProcessOutcome> {
  return new Promise((resolve, reject) => {
    const fdCount = Math.max(spec.reportFd, spec.infoFd ?? 0) + 1;
    const stdio: ('ignore' | 'pipe')[] = Array.from({ length: fdCount }, (_, fd) =>
      fd === 0 ? 'ignore' : fd <= 2 || fd === spec.reportFd || fd === spec.infoFd ? 'pipe' : 'ignore',
    );
    const started = Date.now();
    const child = spawnGroup(spec, stdio);

    const output = new OutputCapture(limits.logCapBytes);
    const info = new SandboxInfo();
    let killedFor: TestProcessOutcome['killedFor'] = null;
    let exit: { code: number | null; signal: string | null; at: number } | null = null;
    let settled = false;
    /** When a supervisor said the test had ended. */
    let endedAt: number | null = null;
    const timers: NodeJS.Timeout[] = [];

    const ender = new ProcessEnder(child, spec.supervisor ? { supervisor: true } : { sandbox: info });
    let killing = false;
    const kill = (reason: TestProcessOutcome['killedFor']): void => {
      if (exit || killing) return;
      killing = true;
      killedFor = reason;
      ender.end();
    };

    const onOutput = (capture: StreamCapture) => (chunk: Buffer) => {
      capture.write(chunk);
      if (output.totalBytes > limits.maxOutputBytes) kill('output');
    };
    child.stdout?.on('data', onOutput(output.stdout));
    child.stderr?.on('data', onOutput(output.stderr));
    (child.stdio[spec.reportFd] as Readable | null)?.on('data', (chunk: Buffer) => output.writeReport(chunk));
    const timeout = setTimeout(() => kill('timeout'), limits.timeoutSec * 1000);
    timers.push(timeout);
    const disk = limits.disk ? new DiskCap(limits.disk.dirs, limits.disk.maxBytes, () => kill('disk')).start() : null;
    if (spec.infoFd !== undefined) {
      info.listen(child.stdio[spec.infoFd] as Readable | null, () => {
        if (!spec.supervisor || !info.testEnded() || endedAt !== null) return;
        // The test is over; what is left is the supervisor's clean-up, on its own clock.
        endedAt = Date.now();
        clearTimeout(timeout);
        timers.push(setTimeout(() => ender.end(), ender.graceMs));
      });
    }
    const onAbort = (): void => kill(null);
    abort?.addEventListener('abort', onAbort);
    if (abort?.aborted) onAbort();

    const finish = (): void => {
      if (settled) return;
      settled = true;
      timers.forEach(clearTimeout);
      disk?.stop();
      abort?.removeEventListener('abort', onAbort);
      const at = endedAt ?? exit?.at ?? Date.now();
      resolve({
        exitCode: exit?.code ?? null,
        signal: exit?.signal ?? null,
        durationMs: at - started,
        killedFor,
        ...output.result(),
      });
    };

    child.on('error', (error) => {
      if (settled) return;
      if (child.pid === undefined) {
        // Never started (ENOENT, EACCES): no exit or close event follows.
        settled = true;
        timers.forEach(clearTimeout);
        disk?.stop();
        abort?.removeEventListener('abort', onAbort);
        reject(error);
      }
    });
    child.on('exit', (code, signal) => {
      // What the test left behind died with bwrap's pid namespace, or at its supervisor's hands.
      exit = { code, signal, at: Date.now() };
      // A process that escaped the group may hold the pipes open: stop waiting for them.
      timers.push(
        setTimeout(() => {
          for (const stream of child.stdio) stream?.destroy();
          finish();
        }, PIPE_GRACE_MS),
      );
    });
    child.on('close', finish);
  });
}
