/**
 * Files rcb writes for the user (export logs, reports): written whole to a temporary file in
 * the same folder and renamed into place, so a kill at any point leaves the old file or the
 * new one, never a truncated one; never written through a symlink planted at the name
 * (docs/security.md, "Export and runs that lose nothing").
 */
import { closeSync, constants, fsyncSync, lstatSync, mkdirSync, openSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { UsageError } from './local-machine';

/** `--out DIR` as a folder to write into: made if missing; a file or a symlinked name is refused naming the flag. */
export function outputFolder(dir: string, flag = '--out'): string {
  const found = lstatOrNull(dir);
  if (found && !found.isDirectory() && !(found.isSymbolicLink() && statOrNull(dir)?.isDirectory())) {
    throw new UsageError(`${flag} ${dir}: exists and is not a folder (give a folder, or a name that does not exist yet)`);
  }
  if (!found) mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * Write `text` to `path` atomically; a symlink or anything but a regular file at `path` is
 * refused (naming `flag` when the path came from one).
 */
export function writeFileAtomic(path: string, text: string, flag?: string): void {
  const found = lstatOrNull(path);
  const named = flag ? `${flag} ${path}` : path;
  if (found?.isDirectory()) throw new UsageError(`${named}: is a folder; give the name of a file to write`);
  if (found && !found.isFile()) {
    throw new UsageError(`${named}: is ${found.isSymbolicLink() ? 'a symlink' : 'not a regular file'}; rcb does not write through it (remove it first)`);
  }
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  rmSync(temp, { force: true }); // one a killed export left (a link there is removed, not followed)
  // O_EXCL and O_NOFOLLOW: the temporary name is created here, never opened through a link.
  const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    rmSync(temp, { force: true });
    throw e;
  }
  closeSync(fd);
  renameSync(temp, path);
}

function lstatOrNull(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

function statOrNull(path: string) {
  try {
    return statSync(path);
  } catch {
    return null;
  }
}
