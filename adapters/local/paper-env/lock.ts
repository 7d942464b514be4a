/**
 * The papers' Python lock (container/requirements.txt, written by `uv pip compile
 * --generate-hashes`): one pinned requirement per package with the sha256 of every file
 * the index offers for it. `rcb env install` and the image install exactly these files.
 */
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';

/**
 * The files an install reads beside its lock (container/): the build recipes of the source
 * distributions, and the test-time assets with the known gaps. `rcb env install` and the image's
 * installer (container/env-install.ts) find them in the lock's folder, so the image's
 * python-pypi stage copies them there with it (test/infra/env-installer-stage.test.ts).
 */
export const LOCK_COMPANIONS = { recipes: 'requirements-build.json', assets: 'requirements-assets.json' } as const;

/** The companion file `kind` of the lock `lockFile`: the same folder. */
export function lockCompanion(lockFile: string, kind: keyof typeof LOCK_COMPANIONS): string {
  return join(dirname(lockFile), LOCK_COMPANIONS[kind]);
}

export interface LockEntry {
  /** Normalized name (PEP 503: lower case, runs of -_. as one -). */
  name: string;
  version: string;
  /** sha256 hex digests of the files allowed for this pin. */
  hashes: string[];
  /** 1-based line of the requirement in the lock, for error messages. */
  line: number;
  /** The requirement as pip reads it: `name==version --hash=sha256:... ...`. */
  requirement: string;
}

export interface Lock {
  entries: LockEntry[];
  /** sha256 of the lock's text: an installed environment records it. */
  digest: string;
}

export function normalizeName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '-');
}

export class LockError extends Error {
  constructor(file: string, line: number, message: string) {
    super(`${file}:${line}: ${message}`);
    this.name = 'LockError';
  }
}

/** Parses a hashed lock; every requirement must be `name==version` with at least one hash. */
export function parseLock(text: string, file = 'requirements.txt'): Lock {
  const entries: LockEntry[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i + 1;
    let logical = lines[i]!.replace(/(^|\s)#.*$/, '');
    while (logical.trimEnd().endsWith('\\') && i + 1 < lines.length) {
      logical = `${logical.trimEnd().slice(0, -1)} ${lines[++i]!.replace(/(^|\s)#.*$/, '')}`;
    }
    logical = logical.trim();
    if (!logical) continue;
    if (logical.startsWith('-'))
      throw new LockError(file, start, `options are not allowed in the lock (${logical.split(/\s/)[0]}): every file comes from the one configured index`);
    const m = /^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([^\s;]+)\s*(.*)$/.exec(logical);
    if (!m) throw new LockError(file, start, `not a pinned requirement (name==version --hash=sha256:...): ${logical.slice(0, 80)}`);
    const hashes = [...m[4]!.matchAll(/--hash=sha256:([0-9a-f]{64})/g)].map((h) => h[1]!);
    if (!hashes.length) throw new LockError(file, start, `${m[1]}==${m[3]} has no --hash=sha256: the lock must be generated with --generate-hashes`);
    const name = normalizeName(m[1]!);
    if (entries.some((e) => e.name === name)) throw new LockError(file, start, `${name} is pinned twice`);
    entries.push({ name, version: m[3]!, hashes, line: start, requirement: `${m[1]}==${m[3]} ${hashes.map((h) => `--hash=sha256:${h}`).join(' ')}` });
  }
  if (!entries.length) throw new LockError(file, 1, 'the lock holds no requirement');
  return { entries, digest: createHash('sha256').update(text).digest('hex') };
}

/**
 * The distribution a wheel or sdist file name belongs to, normalized, with its version:
 * `torch-2.5.1-cp311-...whl` -> torch 2.5.1; `mmcv-full-1.7.2.tar.gz` -> mmcv-full 1.7.2.
 */
export function distributionOfFile(file: string): { name: string; version: string } | null {
  const wheel = /^([^-]+)-([^-]+)-.*\.whl$/.exec(file);
  if (wheel) return { name: normalizeName(wheel[1]!), version: wheel[2]! };
  const sdist = /^(.+)-([0-9][^-]*)\.(tar\.gz|zip|tar\.bz2)$/.exec(file);
  if (sdist) return { name: normalizeName(sdist[1]!), version: sdist[2]! };
  return null;
}

export function isSdist(file: string): boolean {
  return !file.endsWith('.whl');
}
