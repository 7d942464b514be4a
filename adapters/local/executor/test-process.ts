/**
 * Runs one test process and watches it: wall-clock limit, output limit, capped logs,
 * the driver's report pipe, and the kill that leaves no process behind.
 */
import type { Readable } from 'node:stream';
import type { StreamCapture } from './capped-log';
import { killQuietly, OutputCapture, SandboxInfo, spawnGroup, type CapturedOutput, type ProcessSpawn } from './child-process';

/** How long to wait for the pipes to close once the process has exited and been killed. */
const PIPE_GRACE_MS = 2_000;
/** How long the sandbox's init may take to die before the whole process group is killed. */
const KILL_GRACE_MS = 2_000;

export interface TestProcessSpec extends ProcessSpawn {
  /** The child's fd where the driver writes its report. */
  reportFd: number;
  /**
   * The child's fd where bwrap writes `{"child-pid": N}`: the sandbox's init, whose
   * death ends every process in the sandbox before bwrap itself exits.
   */
  infoFd?: number;
}

export interface TestProcessLimits {
  timeoutSec: number;
  maxOutputBytes: number;
  logCapBytes: number;
}

export interface TestProcessOutcome extends CapturedOutput {
  exitCode: number | null;
  signal: string | null;
  durationMs: number;
  killedFor: 'timeout' | 'output' | null;
}

/**
 * Spawns the process in its own process group and resolves once it has exited and its
 * pipes are closed. Rejects only when it cannot be started at all. `abort` kills it.
 */
export function runTestProcess(
  spec: TestProcessSpec,
  limits: TestProcessLimits,
  abort?: AbortSignal,
): Promise<TestProcessOutcome> {
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
    const timers: NodeJS.Timeout[] = [];

    const killGroup = (): void => {
      if (child.pid !== undefined) killQuietly(-child.pid);
    };
    let killing = false;
    const kill = (reason: TestProcessOutcome['killedFor']): void => {
      if (exit || killing) return;
      killing = true;
      killedFor = reason;
      const init = info.initPid();
      if (init === null) return killGroup();
      // Killing the sandbox's init empties its pid namespace before bwrap reports the exit.
      killQuietly(init);
      timers.push(setTimeout(killGroup, KILL_GRACE_MS));
    };

    const onOutput = (capture: StreamCapture) => (chunk: Buffer) => {
      capture.write(chunk);
      if (output.totalBytes > limits.maxOutputBytes) kill('output');
    };
    child.stdout?.on('data', onOutput(output.stdout));
    child.stderr?.on('data', onOutput(output.stderr));
    (child.stdio[spec.reportFd] as Readable | null)?.on('data', (chunk: Buffer) => output.writeReport(chunk));
    if (spec.infoFd !== undefined) info.listen(child.stdio[spec.infoFd] as Readable | null);

    timers.push(setTimeout(() => kill('timeout'), limits.timeoutSec * 1000));
    const onAbort = (): void => kill(null);
    abort?.addEventListener('abort', onAbort);
    if (abort?.aborted) onAbort();

    const finish = (): void => {
      if (settled) return;
      settled = true;
      timers.forEach(clearTimeout);
      abort?.removeEventListener('abort', onAbort);
      const at = exit?.at ?? Date.now();
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
        abort?.removeEventListener('abort', onAbort);
        reject(error);
      }
    });
    child.on('exit', (code, signal) => {
      exit = { code, signal, at: Date.now() };
      // Whatever the test left in its process group (a background child) dies with it.
      killGroup();
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
