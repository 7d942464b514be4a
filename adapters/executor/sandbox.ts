/**
 * The bubblewrap sandbox of a test run: its command line, and the checks that bwrap is
 * there and works. The sandbox sees a read-only system (/usr and friends, a few /etc
 * files, the interpreter's own directories), a private /tmp, its workspace read-write at
 * /workspace and the driver at /rcb/rcb_driver.py: never /root, /home, the caller's
 * checkout, the run directory or another candidate's workspace. It has no network and
 * its own pid, ipc, uts, user and cgroup namespaces.
 */
import { execFile } from 'node:child_process';
import { accessSync, constants, lstatSync, readdirSync, readlinkSync } from 'node:fs';
import { delimiter, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import type { PythonInfo } from './python';
import type { SandboxUser } from './sandbox-users';

/** Where every candidate sees its workspace, so that paths are identical across runs. */
export const SANDBOX_WORKSPACE = '/workspace';
/** Where rcb's own files (the driver, the warm server) sit inside the sandbox. */
export const SANDBOX_RCB_DIR = '/rcb';
/** Where the driver sits inside the sandbox. */
export const SANDBOX_DRIVER = `${SANDBOX_RCB_DIR}/rcb_driver.py`;

/** Top-level system directories, mirrored read-only, or as the symlinks they are on merged-/usr hosts. */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib64', '/lib32', '/libx32'];

/**
 * The parts of /etc that the dynamic linker, Python and common ML libraries read. The
 * rest of /etc stays out: it can hold credentials (npmrc, pip.conf, gitconfig).
 */
const ETC_ENTRIES = [
  'alternatives', // Debian's libblas.so.3 and friends are symlinks through here
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'localtime',
  'timezone',
  'nsswitch.conf',
  'host.conf',
  'hosts',
  'mime.types',
  'os-release',
  'fonts',
  'matplotlibrc',
];

/** Mount points the sandbox makes itself; an interpreter directory may not cover them. */
const RESERVED = ['/proc', '/dev', '/tmp', SANDBOX_WORKSPACE, SANDBOX_RCB_DIR, '/etc'];

export interface SandboxPlanOptions {
  python: PythonInfo;
  /** The whole environment of the test process (bwrap starts from an empty one). */
  env: Record<string, string>;
  /** Host files bound at /etc/passwd and /etc/group (see sandbox-users.ts). */
  passwdFile: string;
  groupFile: string;
  /** Size of the sandbox's /tmp and /dev/shm (tmpfs, so it costs memory). */
  tmpfsBytes: number;
  /** rcb's own run directory: never visible inside, so interpreter dirs covering it are skipped. */
  runDir: string;
  /** Options this bwrap knows (see bwrapOptions); older ones lack --size and --disable-userns. */
  bwrapOptions: ReadonlySet<string>;
  /** Told about interpreter directories left out of the sandbox, and missing bwrap options. */
  warn?: (message: string) => void;
}

const isWithin = (path: string, dir: string): boolean => path === dir || path.startsWith(dir === sep ? dir : dir + sep);

/** bwrap arguments for the system directories, as they are on this host. */
export function systemMountArgs(): string[] {
  const args: string[] = [];
  for (const dir of SYSTEM_DIRS) {
    let stat;
    try {
      stat = lstatSync(dir);
    } catch {
      continue;
    }
    if (stat.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else if (stat.isDirectory()) args.push('--ro-bind', dir, dir);
  }
  return args;
}

function etcMountArgs(passwdFile: string, groupFile: string): string[] {
  const names = new Set(ETC_ENTRIES);
  try {
    // Debian keeps sitecustomize and friends in /etc/python3 and /etc/python3.N.
    for (const entry of readdirSync('/etc')) if (/^python3(\.\d+)?$/.test(entry)) names.add(entry);
  } catch {
    // No /etc at all: nothing to mirror.
  }
  const args: string[] = [];
  for (const name of [...names].sort()) {
    const path = join('/etc', name);
    try {
      lstatSync(path);
    } catch {
      continue;
    }
    args.push('--ro-bind', path, path);
  }
  args.push('--ro-bind', passwdFile, '/etc/passwd', '--ro-bind', groupFile, '/etc/group');
  return args;
}

/**
 * The interpreter's directories that the system mounts do not already cover, outermost
 * only. Directories that would expose the run directory (or cover a reserved mount
 * point) are left out, with a warning.
 */
export function interpreterDirs(python: PythonInfo, runDir: string, warn?: (message: string) => void): string[] {
  const wanted = [
    python.prefix,
    python.basePrefix,
    python.execPrefix,
    python.baseExecPrefix,
    resolve(python.executable, '..'),
    resolve(python.realExecutable, '..'),
    ...python.pathEntries,
  ]
    .filter((p) => isAbsolute(p))
    .map((p) => resolve(p));
  const chosen: string[] = [];
  for (const dir of [...new Set(wanted)].sort((a, b) => a.length - b.length)) {
    if (SYSTEM_DIRS.some((root) => isWithin(dir, root))) continue;
    if (chosen.some((outer) => isWithin(dir, outer))) continue;
    const exposesRun = isWithin(runDir, dir) || isWithin(dir, runDir);
    const coversReserved = RESERVED.some((r) => isWithin(r, dir) || (r !== '/tmp' && isWithin(dir, r)));
    if (exposesRun || coversReserved) {
      warn?.(`rcb: not binding the interpreter directory ${dir} into the sandbox: it would expose or hide rcb's own mounts`);
      continue;
    }
    chosen.push(dir);
  }
  return chosen;
}

/**
 * The part of the bwrap command line that is the same for every candidate of an
 * executor: namespaces, environment and read-only mounts.
 */
export function sandboxBaseArgs(options: SandboxPlanOptions): string[] {
  const has = (option: string): boolean => options.bwrapOptions.has(option);
  const args = [
    '--unshare-all', // no network; own pid, ipc, uts, user and cgroup namespaces
    '--die-with-parent',
    '--new-session', // no access to a controlling terminal
    '--hostname',
    'rcb',
  ];
  if (has('--disable-userns')) {
    // No nested user namespaces: less kernel surface for the test. It needs the user
    // namespace required, where --unshare-all only tries for one.
    args.push('--unshare-user', '--disable-userns');
  }
  // The process is spawned with the allow-listed environment already; this makes sure.
  if (has('--clearenv')) args.push('--clearenv');
  for (const [name, value] of Object.entries(options.env)) args.push('--setenv', name, value);
  args.push('--proc', '/proc', '--dev', '/dev');
  if (has('--size')) {
    const size = String(Math.max(1, Math.floor(options.tmpfsBytes)));
    args.push('--size', size, '--tmpfs', '/tmp', '--size', size, '--tmpfs', '/dev/shm');
  } else {
    options.warn?.('rcb: this bwrap cannot size a tmpfs (--size, bwrap 0.8+): the sandbox /tmp is bounded only by memory');
    args.push('--tmpfs', '/tmp', '--tmpfs', '/dev/shm');
  }
  args.push(...systemMountArgs());
  args.push(...etcMountArgs(options.passwdFile, options.groupFile));
  for (const dir of interpreterDirs(options.python, options.runDir, options.warn)) args.push('--ro-bind', dir, dir);
  return args;
}

/**
 * The full bwrap command line of one run: the base, this candidate's workspace and the
 * driver, then the command. `infoFd` is where bwrap writes the pid of the sandbox's
 * init process, whose death takes every process of the sandbox with it.
 */
export function sandboxArgs(baseArgs: readonly string[], workspace: string, driver: string, infoFd: number, command: readonly string[]): string[] {
  // The driver's folder, not the file alone: the driver imports its guard (rcb_guard.py) from beside it.
  return sandboxCommandArgs(baseArgs, workspace, [dirname(driver), SANDBOX_RCB_DIR], infoFd, command);
}

/**
 * The bwrap command line of a sandbox: the base, `workspace` read-write at /workspace
 * (also the working directory), one host path `roBind[0]` read-only at `roBind[1]` (under
 * /rcb), then the command. See sandboxArgs for `infoFd`.
 */
export function sandboxCommandArgs(
  baseArgs: readonly string[],
  workspace: string,
  roBind: readonly [host: string, inside: string],
  infoFd: number,
  command: readonly string[],
): string[] {
  return [
    ...baseArgs,
    '--bind',
    workspace,
    SANDBOX_WORKSPACE,
    '--ro-bind',
    roBind[0],
    roBind[1],
    '--chdir',
    SANDBOX_WORKSPACE,
    // The root itself is a tmpfs; nothing may be written outside /workspace and /tmp.
    '--remount-ro',
    '/',
    '--info-fd',
    String(infoFd),
    '--',
    ...command,
  ];
}

/** The bwrap executable: the given path, else the first `bwrap` on PATH, else null. */
export function findBwrap(given?: string): string | null {
  const candidates = given
    ? [given]
    : [
        ...(process.env.PATH ?? '')
          .split(delimiter)
          .filter(Boolean)
          .map((d) => join(d, 'bwrap')),
        '/usr/bin/bwrap',
      ];
  for (const path of candidates) {
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // Try the next one.
    }
  }
  return null;
}

/** The command-line options a bwrap executable knows, read from its --help. */
export function bwrapOptions(bwrap: string): Promise<Set<string>> {
  return new Promise((resolvePromise, reject) => {
    execFile(bwrap, ['--help'], { env: {}, timeout: 30_000 }, (error, stdout, stderr) => {
      const text = `${String(stdout)}\n${String(stderr)}`;
      const options = new Set(text.match(/--[a-z][a-z0-9-]*/g) ?? []);
      if (options.size === 0) reject(new Error(`rcb: cannot run ${bwrap} --help: ${error?.message ?? 'no output'}`));
      else resolvePromise(options);
    });
  });
}

/** Error for a host without bubblewrap. */
export function missingBwrapError(): Error {
  return new Error(
    'rcb: bubblewrap (bwrap) is not installed, and it is what keeps generated code away from your files, ' +
      'keys and network. Install it with `apt-get install bubblewrap` (Debian/Ubuntu; `dnf install bubblewrap` ' +
      'on Fedora), or pass unsafeNoSandbox: true (CLI: --unsafe-no-sandbox) to run tests without a sandbox.',
  );
}

/**
 * Starts an empty sandbox once, as the test user, so that a host where bwrap cannot
 * create namespaces fails with its reason before any candidate runs.
 */
export function checkSandbox(bwrap: string, baseArgs: readonly string[], user?: SandboxUser): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    execFile(
      bwrap,
      [...baseArgs, '--remount-ro', '/', '--', '/bin/sh', '-c', 'exit 0'],
      { cwd: '/', env: {}, uid: user?.uid, gid: user?.gid, timeout: 30_000 },
      (error, _stdout, stderr) => {
        if (!error) return resolvePromise();
        reject(
          new Error(
            `rcb: bubblewrap cannot start a sandbox here: ${String(stderr).trim() || error.message}. ` +
              'Unprivileged user namespaces must be enabled (sysctl kernel.unprivileged_userns_clone=1; ' +
              'on Ubuntu 24.04+ also kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap).',
          ),
        );
      },
    );
  });
}
