/**
 * What the test process (test-process.ts) and the warm worker (warm-worker.ts) share:
 * spawning in a process group of its own, bwrap's info fd (the pid of the sandbox's
 * init), the SIGKILL that does not mind a process already gone, and the capture of a
 * test's stdout, stderr and driver report.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import type { Readable } from 'node:stream';
import type { CappedLog } from '../../core/types';
import { OFFICIAL_MARKERS } from '../../core/judge';
import { StreamCapture } from './capped-log';

/** The driver's report is a few hundred bytes; more than this is not a report. */
const MAX_REPORT_BYTES = 1 << 20;

/** A process to start: as given, or bwrap with the sandbox's command line. */
export interface ProcessSpawn {
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  uid?: number;
  gid?: number;
}

/** Spawns the process in its own process group, so that it can be killed as a whole. */
export function spawnGroup(spec: ProcessSpawn, stdio: StdioOptions): ChildProcess {
  return spawn(spec.command, spec.args, {
    cwd: spec.cwd,
    env: spec.env,
    uid: spec.uid,
    gid: spec.gid,
    stdio,
    detached: true, // its own process group, killed as a whole
  });
}

/** `signal` (SIGKILL by default) to `pid` (a negative one: a process group); nothing when it is already gone. */
export function killQuietly(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}

/** How long bwrap's init may take to die (and empty its pid namespace). */
const SANDBOX_KILL_GRACE_MS = 2_000;
/**
 * How long a supervisor may take to end what a test left (rcb_contain.py gives up after
 * 10 s): killing it sooner would let the rest escape.
 */
const SUPERVISOR_GRACE_MS = 15_000;

/**
 * Ends a spawned sandbox or supervisor with everything it started. It signals only while
 * the spawned process has not exited, so that neither its pid nor its process group can
 * have been handed to another process yet:
 *
 * - bwrap: its init, once bwrap said which (the pid namespace empties with it);
 * - a supervisor (rcb_contain.py, the warm server without a namespace): SIGTERM, on which
 *   it ends its own descendants and then itself;
 *
 * and SIGKILL to the process group if it is still alive a grace period later.
 */
export class ProcessEnder {
  private timer: NodeJS.Timeout | null = null;
  /** How long the end may take before the process group is killed. */
  readonly graceMs: number;

  constructor(
    private readonly child: ChildProcess,
    private readonly how: { sandbox: SandboxInfo } | { supervisor: true },
  ) {
    this.graceMs = 'supervisor' in how ? SUPERVISOR_GRACE_MS : SANDBOX_KILL_GRACE_MS;
    child.once('exit', () => {
      if (this.timer) clearTimeout(this.timer);
    });
  }

  private get alive(): boolean {
    return this.child.pid !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts ending it; calling again while it ends changes nothing. */
  end(): void {
    if (!this.alive || this.timer) return;
    const pid = this.child.pid!;
    const init = 'sandbox' in this.how ? this.how.sandbox.initPid() : null;
    if (init !== null) killQuietly(init);
    else if ('supervisor' in this.how) killQuietly(pid, 'SIGTERM');
    else {
      // bwrap has not said its init yet: --die-with-parent ends the namespace with bwrap
      killQuietly(-pid);
      return;
    }
    this.timer = setTimeout(() => {
      if (this.alive) killQuietly(-pid);
    }, this.graceMs);
  }
}

/**
 * What bwrap writes to its --info-fd, `{"child-pid": N}` (the sandbox's init), or
 * rcb_contain.py to its --status-fd, `{"exit-code": N}` once the test has ended.
 */
export class SandboxInfo {
  private text = '';

  /** `onData` is called after each chunk. */
  listen(stream: Readable | null | undefined, onData?: () => void): void {
    stream?.on('data', (chunk: Buffer) => {
      if (this.text.length < 4096) this.text += chunk.toString('utf8');
      onData?.();
    });
  }

  /** Whether the supervisor said the test itself has ended (its clean-up may go on). */
  testEnded(): boolean {
    return /"exit-(code|signal)"\s*:\s*\d+/.test(this.text);
  }

  /** The pid of the sandbox's init, whose death ends every process in the sandbox; null before bwrap said it. */
  initPid(): number | null {
    const match = /"child-pid"\s*:\s*(\d+)/.exec(this.text);
    return match ? Number(match[1]) : null;
  }
}

/** The output of one test as the executor reports it. */
export interface CapturedOutput {
  stdout: CappedLog;
  stderr: CappedLog;
  markersSeen: string[];
  /** Everything written to the report fd, or null when nothing (or too much) was. */
  report: string | null;
}

/** A test's stdout and stderr (capped, with SPEC 7 markers) and its driver report. */
export class OutputCapture {
  readonly stdout: StreamCapture;
  readonly stderr: StreamCapture;
  private readonly report: Buffer[] = [];
  private reportBytes = 0;

  constructor(logCapBytes: number) {
    this.stdout = new StreamCapture(logCapBytes);
    this.stderr = new StreamCapture(logCapBytes);
  }

  /** Bytes written to stdout and stderr together. */
  get totalBytes(): number {
    return this.stdout.totalBytes + this.stderr.totalBytes;
  }

  writeReport(chunk: Buffer): void {
    this.reportBytes += chunk.length;
    if (this.reportBytes <= MAX_REPORT_BYTES) this.report.push(chunk);
  }

  result(): CapturedOutput {
    const { stdout, stderr, report, reportBytes } = this;
    return {
      stdout: stdout.toCappedLog(),
      stderr: stderr.toCappedLog(),
      markersSeen: OFFICIAL_MARKERS.filter((m) => stdout.markersSeen().includes(m) || stderr.markersSeen().includes(m)),
      report: reportBytes > 0 && reportBytes <= MAX_REPORT_BYTES ? Buffer.concat(report).toString('utf8') : null,
    };
  }
}
