/**
 * What the test process (test-process.ts) and the warm worker (warm-worker.ts) share:
 * spawning in a process group of its own, bwrap's info fd (the pid of the sandbox's
 * init), the SIGKILL that does not mind a process already gone, and the capture of a
 * test's stdout, stderr and driver report.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import type { Readable } from 'node:stream';
import type { CappedLog } from '../../../core/types';
import { OFFICIAL_MARKERS } from '../../../core/judge';
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

/** SIGKILL to `pid` (a negative one: a process group); nothing when it is already gone. */
export function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

/** What bwrap writes to its --info-fd: `{"child-pid": N}`, the sandbox's init. */
export class SandboxInfo {
  private text = '';

  listen(stream: Readable | null | undefined): void {
    stream?.on('data', (chunk: Buffer) => {
      if (this.text.length < 4096) this.text += chunk.toString('utf8');
    });
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
