/**
 * The environment check's results on this machine (`rcb doctor`, and `rcb run` before its
 * tests), one JSON file in rcb's cache folder, by paper digest and interpreter: a paper's
 * oracle is run again only when the paper's content or the interpreter changes, or when
 * `rcb doctor` is asked (after installing packages, say).
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { EnvironmentCache } from '../../core/run/env-check';
import type { PaperEnvironment } from '../../core/records';

interface Entry extends PaperEnvironment {
  checkedAt: string;
}

export class FileEnvironmentCache implements EnvironmentCache {
  constructor(
    private readonly path: string,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private read(): Record<string, Entry> {
    if (!existsSync(this.path)) return {};
    try {
      return JSON.parse(readFileSync(this.path, 'utf8')) as Record<string, Entry>;
    } catch {
      // A cache that cannot be read is no cache: the check runs again and rewrites it.
      return {};
    }
  }

  get(paperDigest: string, interpreter: string): PaperEnvironment | null {
    const e = this.read()[`${interpreter}\0${paperDigest}`];
    return e ? { paper: e.paper, runs: e.runs, reason: e.reason } : null;
  }

  put(paperDigest: string, interpreter: string, result: PaperEnvironment): void {
    const all = this.read();
    all[`${interpreter}\0${paperDigest}`] = { ...result, checkedAt: this.now().toISOString() };
    mkdirSync(dirname(this.path), { recursive: true });
    // Written whole and renamed, so a reader never sees half a file.
    const tmp = `${this.path}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(all, null, 1) + '\n');
    renameSync(tmp, this.path);
  }
}
