/**
 * The workspace of one candidate: a fresh full copy of its paper folder with the spliced
 * file written in (SPEC 7, step 3), owned by the user the test runs as.
 */
import { chmod, chown, cp, lstat, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { isAbsolute, join, normalize, sep } from 'node:path';
import type { Candidate } from '../../core/executor';

/** Bytecode left in the paper folder is never copied: each workspace starts from source. */
export const SKIPPED_DIRS = new Set(['__pycache__']);

export interface WorkspaceOwner {
  uid: number;
  gid: number;
}

/**
 * The candidate's file as a clean relative path, or an error when it would land outside
 * the workspace.
 */
export function splicedFilePath(candidate: Pick<Candidate, 'file' | 'taskId'>): string {
  const file = normalize(candidate.file);
  if (!file || file === '.' || isAbsolute(file) || file === '..' || file.startsWith(`..${sep}`)) {
    throw new Error(`rcb: task ${candidate.taskId}: annotated file ${JSON.stringify(candidate.file)} is not inside the paper folder`);
  }
  return file;
}

/** Copies the paper folder into a new directory under `root` and writes the spliced file. */
export async function createWorkspace(root: string, candidate: Candidate, owner?: WorkspaceOwner): Promise<string> {
  const file = splicedFilePath(candidate);
  const dir = await mkdtemp(join(root, 'ws-'));
  try {
    await cp(candidate.paperDir, dir, {
      recursive: true,
      verbatimSymlinks: true,
      filter: (source) => !SKIPPED_DIRS.has(source.split(sep).pop() ?? ''),
    });
    await writeSplicedFile(dir, file, candidate.source);
    if (owner) await chownTree(dir, owner);
    return dir;
  } catch (error) {
    await removeTree(dir);
    throw error;
  }
}

/**
 * Writes the candidate's file into a workspace in place of the copy there, never through
 * a symlink the paper folder might hold.
 */
export async function writeSplicedFile(dir: string, file: string, source: string, owner?: WorkspaceOwner): Promise<void> {
  const target = join(dir, file);
  await rm(target, { force: true });
  await writeFile(target, source, { mode: 0o644 });
  if (owner) await chown(target, owner.uid, owner.gid);
}

async function chownTree(path: string, owner: WorkspaceOwner): Promise<void> {
  const stat = await lstat(path);
  if (stat.isSymbolicLink()) return;
  await chown(path, owner.uid, owner.gid);
  if (!stat.isDirectory()) return;
  for (const entry of await readdir(path)) await chownTree(join(path, entry), owner);
}

/**
 * Removes a workspace (or any tree a test could write to). A test may have left
 * directories without write or search permission, which stop a non-root rm; they are
 * opened up and the removal retried.
 */
export async function removeTree(dir: string): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true });
  } catch {
    await openUpTree(dir);
    await rm(dir, { recursive: true, force: true });
  }
}

async function openUpTree(path: string): Promise<void> {
  let stat;
  try {
    stat = await lstat(path);
  } catch {
    return;
  }
  if (!stat.isDirectory()) return;
  await chmod(path, 0o700).catch(() => undefined);
  const entries = await readdir(path).catch(() => [] as string[]);
  for (const entry of entries) await openUpTree(join(path, entry));
}

/** Removes everything inside `dir` (as removeTree does), keeping `dir` itself. */
export async function emptyDir(dir: string): Promise<void> {
  for (const entry of await readdir(dir)) await removeTree(join(dir, entry));
}
