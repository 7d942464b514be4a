/**
 * The run directory of an executor (cold or warm): workspaces, rcb's Python files and the
 * sandbox's passwd/group live there. It records its owner (pid, pid namespace, start
 * time), so that directories left by an rcb process that was killed (SIGKILL leaves no
 * chance to clean up) are removed by the next executor made in the same place, and only
 * those.
 */
import { readlinkSync } from 'node:fs';
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const PREFIX = 'rcb-run-';
const OWNER_FILE = 'owner.json';

/**
 * Who made a run directory: its pid, the pid namespace that pid belongs to, and the
 * process's start time (so a pid reused by a later process is not taken for the owner).
 */
interface Owner {
  pid: number;
  pidNamespace: string;
  startTime: string;
}

/** This process's pid namespace (the link text of /proc/self/ns/pid), or '' where there is none to read. */
function pidNamespace(): string {
  try {
    return readlinkSync('/proc/self/ns/pid');
  } catch {
    return '';
  }
}

/** The start time of `pid` (field 22 of /proc/PID/stat, in clock ticks since boot), or null when it is gone. */
async function startTime(pid: number): Promise<string | null> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  return stat === null ? null : (stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null);
}

/** Makes a run directory under `parent`, traversable (not listable) by the test users. */
export async function createRunDir(parent: string): Promise<string> {
  const dir = await mkdtemp(join(parent, PREFIX));
  await chmod(dir, 0o711);
  const owner: Owner = { pid: process.pid, pidNamespace: pidNamespace(), startTime: (await startTime(process.pid)) ?? '' };
  await writeFile(join(dir, OWNER_FILE), JSON.stringify(owner));
  return dir;
}

/**
 * Whether the directory's owner has certainly exited. Only an owner of this pid namespace
 * can be judged: from another one (rcb in a container, on the Fargate-like host, sharing
 * this /tmp) its pid means nothing here, and a live run's directory must never go.
 */
async function ownerIsGone(owner: Owner): Promise<boolean> {
  const here = pidNamespace();
  if (!here || owner.pidNamespace !== here || !owner.startTime) return false;
  return (await startTime(owner.pid)) !== owner.startTime;
}

/** Removes run directories under `parent` whose owner process is gone; returns them. */
export async function removeStaleRunDirs(parent: string): Promise<string[]> {
  const removed: string[] = [];
  for (const entry of await readdir(parent).catch(() => [] as string[])) {
    if (!entry.startsWith(PREFIX)) continue;
    const dir = join(parent, entry);
    let owner: Owner;
    try {
      owner = JSON.parse(await readFile(join(dir, OWNER_FILE), 'utf8')) as Owner;
    } catch {
      continue; // no owner file yet (being set up right now), or one this version cannot judge
    }
    if (!Number.isInteger(owner.pid) || owner.pid <= 0 || !(await ownerIsGone(owner))) continue;
    await rm(dir, { recursive: true, force: true });
    removed.push(dir);
  }
  return removed;
}
