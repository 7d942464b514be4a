/**
 * One warm worker: a long-lived bubblewrap sandbox running rcb_warm_server.py, which has
 * imported the heavy modules once and forks a child per candidate. This side speaks the
 * server's frame protocol, captures the child's output exactly as the cold executor does
 * (StreamCapture: caps and SPEC 7 markers), and keeps a backstop timer of its own. A worker
 * that breaks the protocol, dies, overruns the backstop or reports stray processes is
 * marked broken and must be replaced, never reused.
 */
import { DiskCap } from './disk-cap';
import type { ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { OutputCapture, ProcessEnder, SandboxInfo, spawnGroup, type ProcessSpawn } from './child-process';
import type { TestProcessOutcome } from './test-process';
/** Extra time the server gets beyond the test's limit before this side kills the sandbox. */
const BACKSTOP_GRACE_MS = 10_000;
/** Longest a worker may take to start and import its modules. */
const START_TIMEOUT_MS = 180_000;
/** A frame longer than this is a broken server, not output. */
const MAX_FRAME_BYTES = 16 << 20;

const FRAME_FD = 3;
/** The worker's fd where bwrap writes the pid of the sandbox's init: the sandbox's --info-fd. */
export const INFO_FD = 4;

/** What the server says once it is ready. */
export interface WarmHello {
  pid: number;
  preloaded: string[];
  failed: string[];
  preloadMb: number;
  notDumpable: boolean;
  /** The server's start-up, ms: its own imports, the preload, the bookkeeping after it (index, gc). */
  startMs?: { server: number; preload: number; index: number };
}

export interface WarmRequest {
  workspace: string;
  candidate: string;
  script: string;
  timeoutSec: number;
  maxOutputBytes: number;
  memoryMb: number;
  maxProcesses: number;
  maxFileMb: number;
}

export interface WarmOutcome extends TestProcessOutcome {
  /** The worker must be replaced before the next candidate. */
  workerBroken: string | null;
}

interface Frame {
  kind: string;
  payload: Buffer;
}

export interface WarmWorkerSpawn extends ProcessSpawn {
  /**
   * The server runs without a pid namespace (--contain tree): it is the supervisor that
   * ends what its children started, on SIGTERM too. Otherwise it runs in bwrap, whose
   * info fd is INFO_FD.
   */
  supervisor: boolean;
}

export class WarmWorker {
  private readonly child: ChildProcess;
  private readonly ender: ProcessEnder;
  private buffer: Buffer = Buffer.alloc(0);
  private readonly info = new SandboxInfo();
  private listener: ((frame: Frame) => void) | null = null;
  private ended: string | null = null;
  private onEnd: ((reason: string) => void) | null = null;
  private busy = false;
  /** Set once the worker may not take another candidate. */
  broken: string | null = null;
  readonly ready: Promise<WarmHello>;
  /** The server's own stderr (diagnostics), last few KiB. */
  private diagnostics = '';

  constructor(spec: WarmWorkerSpawn) {
    this.child = spawnGroup(spec, ['pipe', 'pipe', 'pipe', 'pipe', 'pipe']);
    this.ender = new ProcessEnder(this.child, spec.supervisor ? { supervisor: true } : { sandbox: this.info });
    const keep = (chunk: Buffer): void => {
      this.diagnostics = (this.diagnostics + chunk.toString('utf8')).slice(-4096);
    };
    this.child.stdout?.on('data', keep);
    this.child.stderr?.on('data', keep);
    this.info.listen(this.child.stdio[INFO_FD] as Readable | null);
    (this.child.stdio[FRAME_FD] as Readable | null)?.on('data', (chunk: Buffer) => this.onData(chunk));
    (this.child.stdin as Writable | null)?.on('error', () => undefined);
    const end = (reason: string): void => {
      if (this.ended) return;
      this.ended = reason;
      this.broken ??= reason;
      this.onEnd?.(reason);
    };
    this.child.on('error', (error) => end(`rcb: warm worker failed: ${error.message}`));
    this.child.on('exit', (code, signal) =>
      end(`rcb: warm worker exited (${signal ?? code})${this.diagnostics ? `: ${this.diagnostics.trim().slice(-1000)}` : ''}`),
    );

    this.ready = new Promise<WarmHello>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.kill();
        reject(new Error('rcb: warm worker did not start in time'));
      }, START_TIMEOUT_MS);
      this.onEnd = (reason) => {
        clearTimeout(timer);
        reject(new Error(reason));
      };
      this.listener = (frame) => {
        clearTimeout(timer);
        this.listener = null;
        this.onEnd = null;
        if (frame.kind !== 'h') {
          this.fail('rcb: warm worker spoke before saying hello');
          reject(new Error(this.broken!));
          return;
        }
        try {
          resolve(JSON.parse(frame.payload.toString('utf8')) as WarmHello);
        } catch {
          this.fail('rcb: warm worker sent a malformed hello');
          reject(new Error(this.broken!));
        }
      };
    });
    this.ready.catch(() => undefined);
  }

  /**
   * Runs one candidate whose workspace is already in place. Never rejects. `disk`: folders
   * measured while it runs (disk-cap.ts); past the cap the worker is killed with the test.
   */
  run(request: WarmRunRequest, abort?: AbortSignal, disk?: { dirs: readonly string[]; maxBytes: number }): Promise<WarmOutcome> {
    if (this.busy) throw new Error('rcb: warm worker is busy');
    this.busy = true;
    return new Promise<WarmOutcome>((resolve) => {
      const output = new OutputCapture(request.logCapBytes);
      const started = Date.now();
      let settled = false;
      let killedFor: WarmOutcome['killedFor'] = null;

      const finish = (done: { exitCode: number | null; killedFor: WarmOutcome['killedFor']; durationMs: number } | null): void => {
        if (settled) return;
        settled = true;
        clearTimeout(backstop);
        cap?.stop();
        abort?.removeEventListener('abort', onAbort);
        this.listener = null;
        this.onEnd = null;
        this.busy = false;
        resolve({
          exitCode: done ? done.exitCode : null,
          signal: done ? null : 'SIGKILL',
          durationMs: done ? done.durationMs : Date.now() - started,
          killedFor: done ? done.killedFor : killedFor,
          ...output.result(),
          workerBroken: this.broken,
        });
      };
      const backstop = setTimeout(
        () => {
          killedFor = 'timeout';
          this.fail('rcb: warm worker overran the time limit');
          finish(null);
        },
        request.timeoutSec * 1000 + BACKSTOP_GRACE_MS,
      );
      const onAbort = (): void => {
        this.fail('rcb: the executor was closed');
        finish(null);
      };
      abort?.addEventListener('abort', onAbort);
      const cap = disk
        ? new DiskCap(disk.dirs, disk.maxBytes, () => {
            killedFor = 'disk';
            this.fail('rcb: the test wrote more to disk than its cap');
            finish(null);
          }).start()
        : null;

      this.onEnd = () => finish(null);
      this.listener = (frame) => {
        switch (frame.kind) {
          case 'o':
            output.stdout.write(frame.payload);
            return;
          case 'e':
            output.stderr.write(frame.payload);
            return;
          case 'r':
            output.writeReport(frame.payload);
            return;
          case 'd': {
            let done;
            try {
              done = JSON.parse(frame.payload.toString('utf8')) as {
                exitCode: number | null;
                killedFor: WarmOutcome['killedFor'];
                durationMs: number;
                strays: number;
                dirty?: string[];
              };
            } catch {
              this.fail('rcb: warm worker sent a malformed result');
              finish(null);
              return;
            }
            if (done.strays > 0) this.fail(`rcb: ${done.strays} stray process(es) left in the warm sandbox`);
            if (done.dirty?.length) this.fail(`rcb: could not empty ${done.dirty.join(', ')} of the warm sandbox`);
            finish(done);
            return;
          }
          default:
            this.fail(`rcb: warm worker sent an unknown frame ${JSON.stringify(frame.kind)}`);
            finish(null);
        }
      };
      if (this.broken) {
        finish(null);
        return;
      }
      const { logCapBytes: _cap, ...wire } = request;
      this.child.stdin?.write(`${JSON.stringify(wire)}\n`);
      if (abort?.aborted) onAbort();
    });
  }

  /** Ends the worker and everything its children started (see ProcessEnder). */
  kill(): void {
    this.ender.end();
  }

  /** Resolves once the sandbox process has exited. */
  async stop(): Promise<void> {
    this.broken ??= 'rcb: warm worker stopped';
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.kill();
    await exited;
  }

  private fail(reason: string): void {
    this.broken ??= reason;
    this.kill();
  }

  private onData(chunk: Buffer): void {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    while (this.buffer.length >= 5) {
      const length = this.buffer.readUInt32BE(1);
      if (length > MAX_FRAME_BYTES) {
        this.fail('rcb: warm worker sent an oversized frame');
        return;
      }
      if (this.buffer.length < 5 + length) return;
      const frame = { kind: String.fromCharCode(this.buffer[0]), payload: this.buffer.subarray(5, 5 + length) };
      this.buffer = this.buffer.subarray(5 + length);
      if (this.listener) this.listener(frame);
      else this.fail('rcb: warm worker spoke out of turn');
    }
  }
}

/** A request plus what only this side needs. */
export type WarmRunRequest = WarmRequest & { logCapBytes: number };
