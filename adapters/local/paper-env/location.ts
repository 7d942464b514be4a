/**
 * Where the papers' locked Python environment lives, and the interpreter rcb uses when it
 * exists: `--python` first, then $RCB_PYTHON, then this environment, then Debian's
 * /usr/bin/python3, then python3 on PATH.
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';

/** The file an installed environment holds: which lock it was installed from. */
export const ENV_MARKER = 'rcb-env.json';

export interface EnvMarker {
  lockDigest: string;
  packages: number;
  python: string;
  installedAt: string;
  /** `rcb env install --torch-index URL`: where the CPU-only torch came from, and its files' sha256. */
  torchIndex?: string;
  torchFiles?: Record<string, string>;
}

function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/**
 * $RCB_ENV_DIR, else ~/.rcb/env; as root /var/lib/rcb/env, because root's tests run in
 * the uid sandbox as unprivileged users, who cannot read anything under /root.
 */
export function defaultEnvDir(): string {
  if (process.env.RCB_ENV_DIR) return resolve(process.env.RCB_ENV_DIR);
  return isRoot() ? '/var/lib/rcb/env' : join(homedir(), '.rcb', 'env');
}

/** The wheelhouse downloads are kept in: $RCB_WHEELHOUSE, else ~/.rcb/wheelhouse. */
export function defaultWheelhouse(): string {
  return process.env.RCB_WHEELHOUSE ? resolve(process.env.RCB_WHEELHOUSE) : join(homedir(), '.rcb', 'wheelhouse');
}

export function envPython(dir: string): string {
  return join(dir, 'bin', 'python');
}

export function readEnvMarker(dir: string): EnvMarker | null {
  try {
    return JSON.parse(readFileSync(join(dir, ENV_MARKER), 'utf8')) as EnvMarker;
  } catch {
    return null;
  }
}

/**
 * The interpreter of a finished install in `dir` (default: defaultEnvDir()), or null. The
 * folder's symlinks are resolved (a link ~/.rcb/env -> /var/lib/rcb/env would send the
 * sandbox's users through /root), the interpreter's own link is kept: a virtualenv's
 * python links to its base interpreter but finds its packages beside the link.
 */
export function installedEnvPython(dir = defaultEnvDir()): string | null {
  const python = envPython(dir);
  if (!existsSync(python) || !readEnvMarker(dir)) return null;
  return join(realpathSync(dirname(python)), basename(python));
}
