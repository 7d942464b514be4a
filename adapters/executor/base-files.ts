import { lstat, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { SKIPPED_DIRS } from './workspace';
import { fileSha256 } from '../file-sha256';

interface FileEntry {
  kind: 'file' | 'symlink' | 'other';
  size: number;
  /** sha256 of a file's bytes, or a symlink's target. */
  digest?: string;
}

type FileIndex = Map<string, FileEntry>;

/**
 * Lists a tree without following symlinks, so that a symlink the test put in place of a
 * directory is seen as such and never leads the walk out of the workspace.
 */
async function walk(root: string, withDigests: boolean): Promise<FileIndex> {
  const index: FileIndex = new Map();
  const visit = async (rel: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(join(root, rel), { withFileTypes: true });
    } catch {
      return; // unreadable or gone: its files count as removed
    }
    for (const entry of entries) {
      const childRel = rel ? join(rel, entry.name) : entry.name;
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(entry.name)) await visit(childRel);
      } else if (entry.isSymbolicLink()) {
        index.set(childRel, { kind: 'symlink', size: 0, digest: await readlink(join(root, childRel)) });
      } else if (entry.isFile()) {
        const { size } = await lstat(join(root, childRel));
        index.set(childRel, { kind: 'file', size, digest: withDigests ? await fileSha256(join(root, childRel)) : undefined });
      } else {
        index.set(childRel, { kind: 'other', size: 0 });
      }
    }
  };
  await visit('');
  return index;
}

/** Base-file indexes of paper folders, computed once each: the pset is never written. */
export class BaseFiles {
  private readonly indexes = new Map<string, Promise<FileIndex>>();

  private index(paperDir: string): Promise<FileIndex> {
    let index = this.indexes.get(paperDir);
    if (!index) {
      index = walk(paperDir, true);
      this.indexes.set(paperDir, index);
      // A failed walk is not remembered, so the next candidate tries again.
      index.catch(() => this.indexes.delete(paperDir));
    }
    return index;
  }

  /**
   * Base files of `paperDir` (relative paths, sorted) that `workspace` no longer holds
   * unchanged. The spliced file and __pycache__ are not base files; files the run
   * added are not tampering.
   */
  async tamperedFiles(paperDir: string, workspace: string, splicedFile: string): Promise<string[]> {
    const [base, now] = await Promise.all([this.index(paperDir), walk(workspace, false)]);
    const tampered: string[] = [];
    for (const [rel, was] of base) {
      if (rel === splicedFile) continue;
      const is = now.get(rel);
      if (!is || is.kind !== was.kind) tampered.push(rel);
      else if (was.kind === 'symlink' && is.digest !== was.digest) tampered.push(rel);
      else if (was.kind === 'file' && (is.size !== was.size || (await fileSha256(join(workspace, rel))) !== was.digest)) {
        tampered.push(rel);
      }
    }
    return tampered.sort();
  }
}
