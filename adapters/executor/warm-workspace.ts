/**
 * Workspaces of the warm pool. Each worker slot owns one directory, bound into its
 * sandbox at /workspace and refilled per candidate; no other slot's sandbox can see it.
 *
 * Filling it is cheap: small files are copied (so a test may write them exactly as it
 * may in a cold workspace, and tamper detection sees it), large files are hardlinked from
 * the slot's own read-only copy of the paper folder (root-owned when rcb runs as root,
 * so the test user cannot change them). When rcb is not root the test runs as rcb's own
 * user and could chmod and rewrite a linked file in place: the slot's base is checked
 * after every run and rebuilt when anything about it changed, and since every slot has
 * its own base no other candidate ever sees the change.
 */
import { constants } from 'node:fs';
import { chmod, chown, copyFile, lchown, link, lstat, mkdir, readdir, readlink, stat, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Candidate } from '../../core/executor';
import { removeTree, SKIPPED_DIRS, splicedFilePath, writeSplicedFile, type WorkspaceOwner } from './workspace';

/** Files at least this large are hardlinked rather than copied. */
export const LINK_THRESHOLD_BYTES = 256 * 1024;

interface BaseEntry {
  rel: string;
  kind: 'dir' | 'file' | 'symlink';
  size: number;
  /** Whether the file is hardlinked into workspaces. */
  linked: boolean;
  target?: string;
  /** mode and mtime of the base copy, to notice a change made through a hardlink. */
  mode?: number;
  mtimeMs?: number;
}

interface SlotBase {
  dir: string;
  entries: BaseEntry[];
}

export class SlotWorkspace {
  private readonly bases = new Map<string, Promise<SlotBase>>();
  private baseCount = 0;
  private linked: { base: SlotBase; paperDir: string } | null = null;

  /**
   * @param workspace the directory bound at /workspace (kept; only its contents change)
   * @param baseRoot where this slot's read-only paper copies live (never inside the sandbox)
   */
  constructor(
    readonly workspace: string,
    private readonly baseRoot: string,
    private readonly owner?: WorkspaceOwner,
  ) {}

  /** Fills the workspace with the paper's files and the spliced file; it must be empty. */
  async fill(candidate: Candidate): Promise<string> {
    const file = splicedFilePath(candidate);
    const base = await this.base(candidate.paperDir);
    this.linked = { base, paperDir: candidate.paperDir };
    for (const entry of base.entries) {
      const target = join(this.workspace, entry.rel);
      const source = join(base.dir, entry.rel);
      if (entry.kind === 'dir') {
        await mkdir(target, { mode: 0o755 });
        if (this.owner) await chown(target, this.owner.uid, this.owner.gid);
      } else if (entry.kind === 'symlink') {
        await symlink(entry.target!, target);
        if (this.owner) await lchown(target, this.owner.uid, this.owner.gid).catch(() => undefined);
      } else if (entry.rel === file) {
      } else if (entry.linked) {
        await link(source, target);
      } else {
        await copyFile(source, target, constants.COPYFILE_FICLONE);
        await chmod(target, 0o644);
        if (this.owner) await chown(target, this.owner.uid, this.owner.gid);
      }
    }
    await writeSplicedFile(this.workspace, file, candidate.source, this.owner);
    return file;
  }

  /**
   * Empties the workspace, and drops the slot's base of the paper when a linked file of
   * it changed (content, mode or time), so the next candidate gets a pristine one.
   * @param tampered base files the run changed, as the tamper check found them
   */
  async clean(tampered: readonly string[]): Promise<void> {
    const used = this.linked;
    this.linked = null;
    for (const entry of await readdir(this.workspace)) await removeTree(join(this.workspace, entry));
    if (!used) return;
    let changed = false;
    for (const entry of used.base.entries) {
      if (!entry.linked) continue;
      if (tampered.includes(entry.rel)) changed = true;
      const now = await stat(join(used.base.dir, entry.rel)).catch(() => null);
      if (!now || now.mode !== entry.mode || now.mtimeMs !== entry.mtimeMs || now.size !== entry.size) changed = true;
      if (changed) break;
    }
    if (changed) {
      this.bases.delete(used.paperDir);
      await removeTree(used.base.dir);
    }
  }

  private base(paperDir: string): Promise<SlotBase> {
    let base = this.bases.get(paperDir);
    if (!base) {
      base = this.makeBase(paperDir);
      this.bases.set(paperDir, base);
      base.catch(() => this.bases.delete(paperDir));
    }
    return base;
  }

  /** A private copy of the paper folder: linked files read-only for everyone. */
  private async makeBase(paperDir: string): Promise<SlotBase> {
    const dir = join(this.baseRoot, String(this.baseCount++));
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const entries: BaseEntry[] = [];
    const visit = async (rel: string): Promise<void> => {
      for (const dirent of await readdir(join(paperDir, rel), { withFileTypes: true })) {
        const childRel = rel ? join(rel, dirent.name) : dirent.name;
        const source = join(paperDir, childRel);
        const target = join(dir, childRel);
        if (dirent.isDirectory()) {
          if (SKIPPED_DIRS.has(dirent.name)) continue;
          await mkdir(target, { mode: 0o700 });
          entries.push({ rel: childRel, kind: 'dir', size: 0, linked: false });
          await visit(childRel);
        } else if (dirent.isSymbolicLink()) {
          entries.push({ rel: childRel, kind: 'symlink', size: 0, linked: false, target: await readlink(source) });
        } else if (dirent.isFile()) {
          await copyFile(source, target);
          const size = (await lstat(target)).size;
          const linked = size >= LINK_THRESHOLD_BYTES;
          // Linked files must be readable by the test user through the link, never writable.
          await chmod(target, linked ? 0o444 : 0o600);
          const after = await stat(target);
          entries.push({ rel: childRel, kind: 'file', size, linked, mode: after.mode, mtimeMs: after.mtimeMs });
        }
        // Sockets, fifos and devices in a paper folder are not copied, as cp would fail on them.
      }
    };
    await visit('');
    return { dir, entries };
  }
}
