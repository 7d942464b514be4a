/**
 * What a slot user left outside its workspace and home in the uid sandbox. Without a
 * mount namespace the host's world-writable directories (/tmp, /dev/shm, ...) are open
 * to the test; after each test the files its uid owns there are found, reported as
 * tampering (the strict judge fails them) and removed, so the next test starts clean.
 */
import { lstatSync, readdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join, sep } from 'node:path';

/** Where any user may create files on a usual Linux host. */
export const SHARED_WRITABLE_DIRS = ['/tmp', '/var/tmp', '/dev/shm', '/run/lock', '/run/shm'];
/** How deep world-writable directories are searched (a uid's own directory is taken whole). */
const MAX_DEPTH = 3;

const within = (path: string, dir: string): boolean => path === dir || path.startsWith(dir + sep);

/**
 * Removes and returns the paths under `roots` owned by `uid`, leaving out anything under `skip`.
 *
 * The search is synchronous: it runs after every test, and on a machine whose /tmp holds
 * thousands of entries the same walk through the thread pool took 100-200 ms a test
 * (15-25 ms this way, during which the event loop waits).
 */
export async function takeFilesOfUid(uid: number, skip: readonly string[], roots: readonly string[] = SHARED_WRITABLE_DIRS): Promise<string[]> {
  const found: string[] = [];
  const visit = (dir: string, depth: number): void => {
    let entries: string[];
    try {
      entries = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of entries) {
      const path = join(dir, name);
      if (skip.some((s) => within(path, s) || within(s, path))) continue;
      let stat;
      try {
        stat = lstatSync(path);
      } catch {
        continue; // gone meanwhile, or not ours to see
      }
      if (stat.uid === uid) found.push(path);
      else if (stat.isDirectory() && stat.mode & 0o002 && depth < MAX_DEPTH) visit(path, depth + 1);
    }
  };
  for (const root of new Set(roots)) visit(root, 1);
  for (const path of found) await rm(path, { recursive: true, force: true });
  return found;
}
