/**
 * What a pset may name: paper ids that are plain folder names, file paths that stay inside
 * the paper's folder, and folders with no symlink or special file in them. A pset comes from
 * whoever wrote it; these checks keep it from reading (into a prompt, a digest or a
 * sandbox's workspace) anything outside itself (docs/security.md, "What a pset can reach").
 */
import { lstatSync, readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { hasControlCharacter } from '../util/terminal-text';

/** Folders the paper digest and the cloud bundle leave out (core/pset/read-pset.ts). */
export const UNDIGESTED_FOLDERS = new Set(['__pycache__', '.git']);

const PAPER_ID = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;

/** Why a paper id cannot name a folder of the pset, or null when it can. */
export function paperIdProblem(id: string): string | null {
  if (PAPER_ID.test(id) && id !== '..' && !id.includes('..')) return null;
  return `paper id ${JSON.stringify(id)} is not a plain folder name (letters, digits, ".", "_" and "-", at most 128, no "/" or "..")`;
}

/** Why a path from papers.yaml cannot name a file inside the paper folder, or null when it can. */
export function relativePathProblem(path: string): string | null {
  if (hasControlCharacter(path)) return 'has a control character';
  if (path.startsWith('/') || path.startsWith('\\') || /^[A-Za-z]:/.test(path)) return 'is absolute (paths are relative to the paper folder)';
  if (path.includes('\\')) return 'has a backslash (use "/")';
  const parts = path.split('/');
  if (parts.includes('..')) return 'has a ".." segment (paths stay inside the paper folder)';
  if (parts.some((p) => p === '' || p === '.')) return 'has an empty or "." segment';
  const hidden = parts.find((p) => UNDIGESTED_FOLDERS.has(p));
  if (hidden) return `is inside ${hidden}/, which the pset digest and the cloud bundle leave out`;
  return null;
}

/** A symlink, FIFO, socket or device found in a paper folder, relative to the folder. */
export interface SpecialEntry {
  rel: string;
  what: string;
}

/**
 * Every entry of `dir` (recursively, not following links) that is neither a regular file nor
 * a folder. A symlink is refused even when it points inside the pset: the workspace copies it
 * as a link, and what it reaches in a sandbox is not what it reached here.
 */
export function specialEntries(dir: string, prefix = ''): SpecialEntry[] {
  const out: SpecialEntry[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    const abs = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...specialEntries(abs, rel));
    else if (entry.isSymbolicLink()) out.push({ rel, what: `a symlink (to ${JSON.stringify(readlinkSync(abs))})` });
    else if (!entry.isFile()) out.push({ rel, what: 'not a regular file' });
  }
  return out;
}

/** Whether `abs` is a symlink itself (lstat; false when it does not exist). */
export function isSymlink(abs: string): boolean {
  try {
    return lstatSync(abs).isSymbolicLink();
  } catch {
    return false;
  }
}
