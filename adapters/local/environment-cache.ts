/**
 * What rcb learnt of this machine's environment, in rcb's cache folder, by paper digest and
 * interpreter: the environment check's results (`rcb doctor`, and `rcb run` before its
 * tests), and the flaky snippets `rcb doctor --repeat` found (which `rcb run` flags). A
 * paper's oracle is run again only when the paper's content or the interpreter changes, or
 * when `rcb doctor` is asked (after installing packages, say).
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { EnvironmentCache } from '../../core/run/env-check';
import type { FlakyCache, FlakyRecord } from '../../core/run/reference-repeat';
import type { PaperEnvironment } from '../../core/records';

/** One JSON file of records by interpreter and paper digest, each with the time it was written. */
class JsonFileCache<T extends object> {
  constructor(
    private readonly path: string,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private read(): Record<string, T & { checkedAt: string }> {
    if (!existsSync(this.path)) return {};
    try {
      return JSON.parse(readFileSync(this.path, 'utf8')) as Record<string, T & { checkedAt: string }>;
    } catch {
      // A cache that cannot be read is no cache: the check runs again and rewrites it.
      return {};
    }
  }

  getEntry(paperDigest: string, interpreter: string): (T & { checkedAt: string }) | null {
    return this.read()[`${interpreter}\0${paperDigest}`] ?? null;
  }

  putEntry(paperDigest: string, interpreter: string, value: T): void {
    const all = this.read();
    all[`${interpreter}\0${paperDigest}`] = { ...value, checkedAt: this.now().toISOString() };
    mkdirSync(dirname(this.path), { recursive: true });
    // Written whole and renamed, so a reader never sees half a file.
    const tmp = `${this.path}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(all, null, 1)}\n`);
    renameSync(tmp, this.path);
  }
}

export class FileEnvironmentCache extends JsonFileCache<PaperEnvironment> implements EnvironmentCache {
  get(paperDigest: string, interpreter: string): PaperEnvironment | null {
    const e = this.getEntry(paperDigest, interpreter);
    return e ? { paper: e.paper, runs: e.runs, reason: e.reason } : null;
  }

  put(paperDigest: string, interpreter: string, result: PaperEnvironment): void {
    this.putEntry(paperDigest, interpreter, result);
  }
}

export class FileFlakyCache extends JsonFileCache<FlakyRecord> implements FlakyCache {
  get(paperDigest: string, interpreter: string): FlakyRecord | null {
    const e = this.getEntry(paperDigest, interpreter);
    return e ? { paper: e.paper, repeat: e.repeat, flaky: e.flaky } : null;
  }

  put(paperDigest: string, interpreter: string, record: FlakyRecord): void {
    this.putEntry(paperDigest, interpreter, record);
  }
}
