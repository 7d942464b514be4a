/**
 * The run directory of an executor (cold or warm): workspaces, rcb's Python files and the
 * sandbox's passwd/group live there. It records its owner's pid, so that directories left
 * by an rcb process that was killed (SIGKILL leaves no chance to clean up) are removed by
 * the next executor made in the same place.
 */
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const PREFIX = 'rcb-run-';
const OWNER_FILE = 'owner.pid';

/** Makes a run directory under `parent`, traversable (not listable) by the test users. */
export async function createRunDir(parent: string): Promise<string> {
  const dir = await mkdtemp(join(parent, PREFIX));
  await chmod(dir, 0o711);
  await writeFile(join(dir, OWNER_FILE), String(process.pid));
  return dir;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive, owned by someone else.
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** Removes run directories under `parent` whose owner process is gone; returns them. */
export async function removeStaleRunDirs(parent: string): Promise<string[]> {
  const removed: string[] = [];
  for (const entry of await readdir(parent).catch(() => [] as string[])) {
    if (!entry.startsWith(PREFIX)) continue;
    const dir = join(parent, entry);
    const owner = Number((await readFile(join(dir, OWNER_FILE), 'utf8').catch(() => '')).trim());
    // No owner file yet: an executor being set up right now.
    if (!Number.isInteger(owner) || owner <= 0 || isAlive(owner)) continue;
    await rm(dir, { recursive: true, force: true });
    removed.push(dir);
  }
  return removed;
}
