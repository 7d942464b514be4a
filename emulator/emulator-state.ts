/**
 * What the emulated cloud keeps between commands: dynalite's on-disk store (the run table),
 * s3rver's directory (the bucket) and a record of each execution of the run workflow, under
 * one folder (`--state-dir`, default ~/.rcb/emulator). `rcb cloud run --emulate` writes it,
 * `rcb cloud status|results RUN --emulate` read it through the same adapters and use cases
 * as a deployed stack, and a second `rcb cloud run --emulate` of a failed run starts its
 * next attempt on it, as Step Functions would.
 *
 * One command at a time: the folder is held by a lock file naming its owner (pid and start
 * time), since two dynalite processes cannot share a store. An owner that has exited leaves
 * a stale lock, taken over; its execution, still RUNNING in the records, is then ABORTED.
 * Without a folder, the records live in memory and the servers' data goes with the process.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { ExecutionDescription, ExecutionStatus, RunExecutions } from '../core/cloud/execution-attempts';

/** The default state folder: ~/.rcb/emulator. */
export function defaultStateDir(): string {
  return join(homedir(), '.rcb', 'emulator');
}

/** An execution as the emulator records it (dates as ISO text). */
interface ExecutionRecord {
  name: string;
  status: ExecutionStatus;
  startDate: string;
  stopDate?: string;
  error?: string;
  cause?: string;
}

interface LockOwner {
  pid: number;
  /** Start time of the process (field 22 of /proc/PID/stat), so a reused pid is not taken for the owner. */
  start: string | null;
}

function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function ownerAlive(owner: LockOwner): boolean {
  const start = processStart(owner.pid);
  return start !== null && (owner.start === null || start === owner.start);
}

/** The error of a state folder another command holds. */
export class StateInUseError extends Error {
  constructor(dir: string, pid: number) {
    super(`the emulator state ${dir} is in use by process ${pid} (another \`rcb cloud ... --emulate\`); wait for it to end, or pass another --state-dir`);
    this.name = 'StateInUseError';
  }
}

export class EmulatorState implements RunExecutions {
  private readonly memory = new Map<string, ExecutionRecord>();
  /** Executions this process started and has not finished. */
  private readonly open = new Set<string>();
  private released = false;

  private constructor(readonly dir: string | undefined) {}

  /** The state in `dir` (created if missing), locked for this process; in memory when `dir` is undefined. */
  static open(dir?: string): EmulatorState {
    const state = new EmulatorState(dir);
    if (!dir) return state;
    mkdirSync(join(dir, 'executions'), { recursive: true });
    const lock = join(dir, 'lock');
    const me: LockOwner = { pid: process.pid, start: processStart(process.pid) };
    let staleOwner: LockOwner | null | undefined;
    for (let tries = 0; ; tries++) {
      try {
        writeFileSync(lock, JSON.stringify(me), { flag: 'wx' });
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || tries > 3) throw err;
      }
      let owner: LockOwner | null = null;
      try {
        owner = JSON.parse(readFileSync(lock, 'utf8')) as LockOwner;
      } catch {
        // Half-written by an owner that died while writing it: stale.
      }
      if (owner && ownerAlive(owner)) throw new StateInUseError(dir, owner.pid);
      rmSync(lock, { force: true });
      staleOwner = owner;
    }
    if (staleOwner !== undefined) state.abortRunning(`the emulator that ran it (process ${staleOwner?.pid ?? '?'}) stopped before it ended`);
    return state;
  }

  get dynamoDir(): string | undefined {
    return this.dir && join(this.dir, 'dynamodb');
  }

  get s3Dir(): string | undefined {
    return this.dir && join(this.dir, 's3');
  }

  private file(name: string): string {
    if (!/^[A-Za-z0-9_-]+$/.test(name)) throw new Error(`not an execution name: ${name}`);
    return join(this.dir!, 'executions', `${name}.json`);
  }

  private read(name: string): ExecutionRecord | null {
    if (!this.dir) return this.memory.get(name) ?? null;
    const path = this.file(name);
    return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as ExecutionRecord) : null;
  }

  private write(record: ExecutionRecord): void {
    if (!this.dir) {
      this.memory.set(record.name, record);
      return;
    }
    // Whole or not at all: a reader never sees half a record.
    const path = this.file(record.name);
    writeFileSync(`${path}.tmp`, JSON.stringify(record, null, 2));
    renameSync(`${path}.tmp`, path);
  }

  private abortRunning(cause: string): void {
    for (const file of readdirSync(join(this.dir!, 'executions')).filter((f) => f.endsWith('.json'))) {
      const record = this.read(file.slice(0, -'.json'.length));
      if (record?.status === 'RUNNING') this.write({ ...record, status: 'ABORTED', stopDate: new Date().toISOString(), error: 'EmulatorStopped', cause });
    }
  }

  async start(name: string): Promise<boolean> {
    if (this.read(name)) return false;
    this.write({ name, status: 'RUNNING', startDate: new Date().toISOString() });
    this.open.add(name);
    return true;
  }

  async status(name: string): Promise<ExecutionStatus | null> {
    return this.read(name)?.status ?? null;
  }

  async describe(name: string): Promise<ExecutionDescription | null> {
    const r = this.read(name);
    if (!r) return null;
    return {
      status: r.status,
      startDate: new Date(r.startDate),
      ...(r.stopDate ? { stopDate: new Date(r.stopDate) } : {}),
      ...(r.error ? { error: r.error } : {}),
      ...(r.cause ? { cause: r.cause } : {}),
    };
  }

  /** Records how the execution `name` ended. */
  finish(name: string, outcome: { status: ExecutionStatus; error?: string; cause?: string }): void {
    const record = this.read(name);
    if (!record) throw new Error(`emulator: no execution ${name} to finish`);
    this.write({ ...record, ...outcome, stopDate: new Date().toISOString() });
    this.open.delete(name);
  }

  /**
   * An emulated execution runs only inside the command that started it, and that command
   * holds this state: there is never one to stop from another command.
   */
  async stop(name: string): Promise<void> {
    const status = await this.status(name);
    if (status === 'RUNNING') throw new Error(`emulator: execution ${name} runs in the process that holds this state; stop that command (Ctrl-C)`);
  }

  /**
   * Releases the folder for the next command. An execution this process started and did not
   * finish (the emulator failed around it) is ABORTED, so the next command starts it again.
   */
  close(): void {
    if (this.released) return;
    this.released = true;
    for (const name of this.open) {
      const record = this.read(name);
      if (record?.status === 'RUNNING')
        this.write({
          ...record,
          status: 'ABORTED',
          stopDate: new Date().toISOString(),
          error: 'EmulatorError',
          cause: 'the emulator stopped before the execution ended',
        });
    }
    this.open.clear();
    if (this.dir) rmSync(join(this.dir, 'lock'), { force: true });
  }
}
