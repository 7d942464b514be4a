/**
 * One `rcb run` per run directory: a lock file `rcb.lock` holding the holder's pid, host and
 * process start time. A second run on the same `--out` refuses and names the holder; a lock
 * left by a process that is gone (SIGKILL, a crash, a reboot) is taken over
 * (docs/running-locally.md, "One run per run directory").
 */
import { closeSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

export const LOCK_FILE = 'rcb.lock';

interface LockHolder {
  pid: number;
  host: string;
  /** The process's start time in clock ticks since boot (/proc/PID/stat), so a reused pid is not taken for the holder. */
  start: string | null;
  since: string;
}

/** Thrown when another live process holds the lock; the message names it. */
export class RunLockedError extends Error {
  constructor(
    readonly dir: string,
    readonly holder: LockHolder,
  ) {
    super(`${dir} is in use by another rcb run (pid ${holder.pid} on ${holder.host}, since ${holder.since}); wait for it to end, or stop it, then run again`);
    this.name = 'RunLockedError';
  }
}

function processStart(pid: number): string | null {
  try {
    // Field 22 of /proc/PID/stat, counted after the command name (which may hold spaces).
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function isAlive(holder: LockHolder): boolean {
  if (holder.host !== hostname()) return true; // cannot be checked from here: assume it runs
  try {
    process.kill(holder.pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const start = processStart(holder.pid);
  return holder.start === null || start === null || start === holder.start;
}

function readHolder(path: string): { text: string; holder: LockHolder | null } | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  try {
    const h = JSON.parse(text) as LockHolder;
    return { text, holder: Number.isInteger(h.pid) && typeof h.host === 'string' ? h : null };
  } catch {
    return { text, holder: null }; // a lock cut short by a kill before its write: nobody's
  }
}

function tryCreate(path: string, body: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o644);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
  try {
    writeSync(fd, body);
  } finally {
    closeSync(fd);
  }
  return true;
}

/** Take the run directory's lock, or throw RunLockedError naming the live holder. Returns the release. */
export function lockRunDir(dir: string): () => void {
  const path = join(dir, LOCK_FILE);
  const mine: LockHolder = { pid: process.pid, host: hostname(), start: processStart(process.pid), since: new Date().toISOString() };
  const body = `${JSON.stringify(mine)}\n`;
  for (let attempt = 0; attempt < 5; attempt++) {
    if (tryCreate(path, body)) return releaser(path, body);
    const found = readHolder(path);
    if (!found) continue;
    if (found.holder && isAlive(found.holder)) throw new RunLockedError(dir, found.holder);
    // Stale: move it aside, then check that what moved is the lock judged stale (not a new holder's).
    const aside = `${path}.stale-${process.pid}`;
    try {
      renameSync(path, aside);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw e;
    }
    const moved = readFileSync(aside, 'utf8');
    if (moved !== found.text) renameSync(aside, path);
    else unlinkSync(aside);
  }
  const found = readHolder(path);
  throw new RunLockedError(dir, found?.holder ?? { pid: 0, host: 'unknown', start: null, since: 'unknown' });
}

function releaser(path: string, body: string): () => void {
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    process.removeListener('exit', release);
    try {
      if (readFileSync(path, 'utf8') === body) unlinkSync(path);
    } catch {
      // gone already: nothing to release
    }
  };
  process.on('exit', release);
  return release;
}

/**
 * Whether the run directory's lock has a live holder: null when there is no lock (the run
 * ended and released it, or an older rcb ran it), else true or false. app/run-owner.ts reads it.
 */
export function lockHolderAlive(dir: string): boolean | null {
  const read = readHolder(join(dir, LOCK_FILE));
  if (!read) return null;
  return read.holder ? isAlive(read.holder) : false;
}
