/**
 * What rcb learnt of this machine's environment, in rcb's cache folder, by paper digest and
 * interpreter: the environment check's results (`rcb doctor`, and `rcb run` before its
 * tests), and the flaky snippets `rcb doctor --repeat` found (which `rcb run` flags). A
 * paper's oracle is run again when the paper's content changes, when the interpreter or
 * the packages it can import change (a package installed, upgraded or removed: see
 * `interpreterFingerprint`), or when `rcb doctor` is asked.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, realpathSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { EnvironmentCache } from '../../core/run/env-check';
import type { FlakyCache, FlakyRecord } from '../../core/run/reference-repeat';
import type { PaperEnvironment } from '../../core/records';

/**
 * What an environment check's result depends on besides the paper: the interpreter's file and
 * the folders it imports from (its `sys.path`), each by its modification time. Installing,
 * upgrading or removing a package adds or removes an entry of one of those folders (a
 * package's folder, its `.dist-info` named by version), which changes that folder's time; so
 * a paper found broken for want of numpy is checked again once numpy is installed, without
 * `rcb doctor`. One short run of the interpreter; an interpreter that cannot run has a
 * fingerprint of its own, so that once it runs, every paper is checked again.
 */
export function interpreterFingerprint(interpreter: string): string {
  const h = createHash('sha256');
  const stamp = (path: string): void => {
    try {
      const real = realpathSync(path);
      h.update(`${path}\0${real}\0${statSync(real).mtimeMs}\n`);
    } catch {
      h.update(`${path}\0absent\n`);
    }
  };
  stamp(interpreter);
  const folders = importFolders(interpreter);
  if (!folders) return `unrunnable:${h.digest('hex').slice(0, 16)}`;
  for (const folder of folders) stamp(folder);
  return h.digest('hex').slice(0, 16);
}

/** The interpreter's `sys.path` (empty entries left out); null when it does not run or answer. */
function importFolders(interpreter: string): string[] | null {
  const r = spawnSync(interpreter, ['-c', 'import json, sys; print(json.dumps([p for p in sys.path if p]))'], {
    encoding: 'utf8',
    timeout: 60_000,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  if (r.status !== 0) return null;
  try {
    const paths: unknown = JSON.parse(r.stdout);
    return Array.isArray(paths) ? paths.filter((p): p is string => typeof p === 'string') : null;
  } catch {
    return null;
  }
}

/**
 * One JSON file of records by interpreter and paper digest, each with the time it was written
 * and the interpreter's fingerprint then; a record whose fingerprint is not the interpreter's
 * now (or that has none, from an older rcb) is not returned, and the next put replaces it.
 */
class JsonFileCache<T extends object> {
  /** Fingerprints by interpreter, taken once per cache object (one command). */
  private readonly fingerprints = new Map<string, string>();

  constructor(
    private readonly path: string,
    private readonly now: () => Date = () => new Date(),
    private readonly fingerprintOf: (interpreter: string) => string = interpreterFingerprint,
  ) {}

  private fingerprint(interpreter: string): string {
    let f = this.fingerprints.get(interpreter);
    if (f === undefined) {
      f = this.fingerprintOf(interpreter);
      this.fingerprints.set(interpreter, f);
    }
    return f;
  }

  private read(): Record<string, T & { checkedAt: string; fingerprint?: string }> {
    if (!existsSync(this.path)) return {};
    try {
      return JSON.parse(readFileSync(this.path, 'utf8')) as Record<string, T & { checkedAt: string; fingerprint?: string }>;
    } catch {
      // A cache that cannot be read is no cache: the check runs again and rewrites it.
      return {};
    }
  }

  getEntry(paperDigest: string, interpreter: string): (T & { checkedAt: string }) | null {
    const entry = this.read()[`${interpreter}\0${paperDigest}`];
    return entry && entry.fingerprint === this.fingerprint(interpreter) ? entry : null;
  }

  putEntry(paperDigest: string, interpreter: string, value: T): void {
    const all = this.read();
    all[`${interpreter}\0${paperDigest}`] = { ...value, checkedAt: this.now().toISOString(), fingerprint: this.fingerprint(interpreter) };
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
