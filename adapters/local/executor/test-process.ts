/**
 * Runs one test process and watches it: wall-clock limit, output limit, capped logs,
 * the driver's report pipe, and the kill that leaves no process behind.
 */
import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import type { CappedLog } from '../../../core/types';
import { ERROR_MARKERS, StreamCapture } from './capped-log';

/** The driver's report is a few hundred bytes; more than this is not a report. */
const MAX_REPORT_BYTES = 1 << 20;
/** How long to wait for the pipes to close once the process has exited and been killed. */
const PIPE_GRACE_MS = 2_000;
/** How long the sandbox's init may take to die before the whole process group is killed. */
const KILL_GRACE_MS = 2_000;

export interface TestProcessSpec {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  uid?: number;
  gid?: number;
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

export interface TestProcessOutcome {
  exitCode: number | null;
  signal: string | null;
  durationMs: number;
  killedFor: 'timeout' | 'output' | null;
  stdout: CappedLog;
  stderr: CappedLog;
  markersSeen: string[];
  /** Everything written to the report fd, or null when nothing (or too much) was. */
  report: string | null;
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
    const child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      env: spec.env,
      uid: spec.uid,
      gid: spec.gid,
      stdio,
      detached: true, // its own process group, killed as a whole
    });

    const stdout = new StreamCapture(limits.logCapBytes);
    const stderr = new StreamCapture(limits.logCapBytes);
    const report: Buffer[] = [];
    let reportBytes = 0;
    let info = '';
    let killedFor: TestProcessOutcome['killedFor'] = null;
    let exit: { code: number | null; signal: string | null; at: number } | null = null;
    let settled = false;
    const timers: NodeJS.Timeout[] = [];

    const killGroup = (): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const sandboxInit = (): number | null => {
      const match = /"child-pid"\s*:\s*(\d+)/.exec(info);
      return match ? Number(match[1]) : null;
    };
    let killing = false;
    const kill = (reason: TestProcessOutcome['killedFor']): void => {
      if (exit || killing) return;
      killing = true;
      killedFor = reason;
      const init = sandboxInit();
      if (init === null) return killGroup();
      // Killing the sandbox's init empties its pid namespace before bwrap reports the exit.
      try {
        process.kill(init, 'SIGKILL');
      } catch {
        // Already gone.
      }
      timers.push(setTimeout(killGroup, KILL_GRACE_MS));
    };

    const onOutput = (capture: StreamCapture) => (chunk: Buffer) => {
      capture.write(chunk);
      if (stdout.totalBytes + stderr.totalBytes > limits.maxOutputBytes) kill('output');
    };
    child.stdout?.on('data', onOutput(stdout));
    child.stderr?.on('data', onOutput(stderr));
    const reportStream = child.stdio[spec.reportFd] as Readable | null;
    reportStream?.on('data', (chunk: Buffer) => {
      reportBytes += chunk.length;
      if (reportBytes <= MAX_REPORT_BYTES) report.push(chunk);
    });
    if (spec.infoFd !== undefined) {
      (child.stdio[spec.infoFd] as Readable | null)?.on('data', (chunk: Buffer) => {
        if (info.length < 4096) info += chunk.toString('utf8');
      });
    }

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
        stdout: stdout.toCappedLog(),
        stderr: stderr.toCappedLog(),
        markersSeen: ERROR_MARKERS.filter((m) => stdout.markersSeen().includes(m) || stderr.markersSeen().includes(m)),
        report: reportBytes > 0 && reportBytes <= MAX_REPORT_BYTES ? Buffer.concat(report).toString('utf8') : null,
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
