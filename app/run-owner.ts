/**
 * Who is working on a run directory, so that a run whose process is gone reads `interrupted`,
 * not `evaluating` (docs/running-locally.md#partial-runs). The run directory's lock
 * (adapters/local/run-lock.ts, its holder's pid) answers first; without one, the pid and process
 * start time `rcb run` wrote into run.json. This is the one place liveness is decided.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { lockHolderAlive } from '../adapters/local/run-lock';

const RUN_FILE = 'run.json';

/** A process's start time, in clock ticks since boot (/proc/PID/stat field 22): a pid reused later has another. */
function startTicks(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from its closing one.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // A zombie (killed, not yet reaped) is gone for the run's purposes.
    if (fields[0] === 'Z' || fields[0] === 'X') return null;
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

/** Record this process as the run directory's owner (run.json keeps its runId). */
export function recordRunOwner(dir: string): void {
  const file = join(dir, RUN_FILE);
  const current = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  const owner = { pid: process.pid, start: startTicks(process.pid) };
  writeFileSync(file, `${JSON.stringify({ ...current, owner }, null, 2)}\n`);
}

/**
 * Whether the process that owns the run directory is alive: true or false when run.json
 * records an owner and this machine can tell; null when it records none (an import, a run of
 * an older rcb) or /proc is not there.
 */
export function runOwnerAlive(dir: string): boolean | null {
  const file = join(dir, RUN_FILE);
  if (!existsSync(file)) return null;
  const locked = lockHolderAlive(dir);
  if (locked !== null) return locked;
  let owner: { pid?: unknown; start?: unknown } | undefined;
  try {
    owner = (JSON.parse(readFileSync(file, 'utf8')) as { owner?: { pid?: unknown; start?: unknown } }).owner;
  } catch {
    return null;
  }
  if (!owner || typeof owner.pid !== 'number' || typeof owner.start !== 'string') return null;
  if (!existsSync('/proc/self/stat')) return null;
  return startTicks(owner.pid) === owner.start;
}
