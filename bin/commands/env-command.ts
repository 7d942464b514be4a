/**
 * `rcb env install [--dir DIR]` and `rcb env path`: the papers' locked Python environment
 * (container/requirements.txt), the one `rcb run`, `rcb doctor` and the bench use when no
 * `--python` and no $RCB_PYTHON is given. docs/paper-environment.md describes it.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { packageRoot } from '../../core/util/package-root';
import { lockCompanion, parseLock, LockError } from '../../adapters/local/paper-env/lock';
import { EnvInstallError, installEnv, readRecipes } from '../../adapters/local/paper-env/install';
import { defaultEnvDir, defaultWheelhouse, installedEnvPython } from '../../adapters/local/paper-env/location';
import { fetchAssets, readEnvNotes } from '../../adapters/local/paper-env/assets';
import { UsageError } from './common';

export interface EnvInstallOptions {
  dir?: string;
  wheelhouse?: string;
  lock?: string;
  basePython?: string;
  offline?: boolean;
  torchIndex?: string;
}

export function lockFile(): string {
  return join(packageRoot(), 'container', 'requirements.txt');
}

/** The assets and known gaps beside a lock (container/requirements-assets.json). */
export function notesFile(lock: string): string {
  return lockCompanion(lock, 'assets');
}

/** A Python 3.11 every user can run: Debian's first (root's tests run as other uids), then python3.11 on PATH. */
function defaultBasePython(): string {
  return existsSync('/usr/bin/python3.11') ? '/usr/bin/python3.11' : 'python3.11';
}

/**
 * As root the tests run as unprivileged uids (the uid sandbox, and bubblewrap's slots too):
 * each folder above the environment must let every user through.
 */
function unreadableAncestor(dir: string): string | null {
  for (let d = dirname(resolve(dir)); ; d = dirname(d)) {
    if (existsSync(d) && (statSync(d).mode & 0o001) === 0) return d;
    if (dirname(d) === d) return null;
  }
}

export async function envInstallCommand(opts: EnvInstallOptions): Promise<number> {
  const dir = resolve(opts.dir ?? defaultEnvDir());
  const file = resolve(opts.lock ?? lockFile());
  let lock;
  try {
    lock = parseLock(readFileSync(file, 'utf8'), file);
  } catch (e) {
    if (e instanceof LockError) throw new UsageError(e.message);
    throw new UsageError(`cannot read the lock ${file}: ${(e as Error).message}`);
  }
  if (process.getuid?.() === 0) {
    const closed = unreadableAncestor(dir);
    if (closed) {
      throw new UsageError(
        `${dir} is under ${closed}, which other users cannot enter; as root, rcb runs the tests as unprivileged uids, ` +
          `so they could not read the environment: pass --dir under /var/lib or /opt (the default as root is /var/lib/rcb/env)`,
      );
    }
  }
  const wheelhouse = resolve(opts.wheelhouse ?? defaultWheelhouse());
  const started = Date.now();
  try {
    const result = await installEnv({
      dir,
      wheelhouse,
      lock,
      lockFile: file,
      recipes: readRecipes(lockCompanion(file, 'recipes')),
      basePython: opts.basePython ?? defaultBasePython(),
      offline: opts.offline,
      torchIndex: opts.torchIndex,
      progress: (line) => process.stderr.write(`rcb env: ${line}\n`),
    });
    const seconds = ((Date.now() - started) / 1000).toFixed(0);
    process.stderr.write(
      result.upToDate
        ? `rcb env: ${dir} already holds the lock's ${result.packages} packages\n`
        : `rcb env: installed ${result.packages} packages in ${seconds} s (log: ${result.log})\n`,
    );
    let notes;
    try {
      notes = readEnvNotes(notesFile(file));
    } catch (e) {
      throw new UsageError((e as Error).message);
    }
    const assets = await fetchAssets({
      envDir: dir,
      python: result.python,
      assets: notes.assets,
      offline: opts.offline,
      progress: (line) => process.stderr.write(`rcb env: ${line}\n`),
    });
    if (assets.length) {
      const have = assets.filter((a) => a.state !== 'missing').length;
      process.stderr.write(`rcb env: ${have} of ${assets.length} test-time asset(s) in ${join(dir, 'assets')}\n`);
    }
    process.stdout.write(`${installedEnvPython(dir) ?? result.python}\n`);
    return 0;
  } catch (e) {
    if (e instanceof EnvInstallError) throw new UsageError(`env install: ${e.message}`);
    throw e;
  }
}

export function envPathCommand(opts: { dir?: string }): number {
  const dir = resolve(opts.dir ?? defaultEnvDir());
  const python = installedEnvPython(dir);
  if (!python) throw new UsageError(`no environment is installed at ${dir}: run \`rcb env install${opts.dir ? ` --dir ${opts.dir}` : ''}\``);
  process.stdout.write(`${python}\n`);
  return 0;
}
