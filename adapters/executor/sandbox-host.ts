/**
 * What both local executors set up on the host before the first candidate: the run
 * directory (after removing those of dead rcb processes), one sandbox user per slot (when root), their /etc/passwd and /etc/group,
 * the interpreter probed as the test user, the tests' environment, and the bubblewrap
 * command line checked by starting an empty sandbox once.
 */
import { existsSync } from 'node:fs';
import { chown, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { sandboxEnvironment } from './environment';
import type { ColdExecutorOptions, ExecutorSettings, SandboxMode } from './executor-options';
import { probePython, type PythonInfo } from './python';
import { createRunDir, removeStaleRunDirs } from './run-dir';
import type { RawExecution } from '../../core/executor';
import { bwrapOptions, checkSandbox, findBwrap, missingBwrapError, sandboxBaseArgs } from './sandbox';
import { writableDirsForSandbox } from './uid-leftovers';
import { allocateSandboxUsers, groupText, passwdText, releaseSandboxUsers, runningAsRoot, type SandboxUser } from './sandbox-users';

export interface SandboxHost {
  runDir: string;
  python: PythonInfo;
  env: Record<string, string>;
  /** The sandbox the tests run in. */
  kind: RawExecution['sandbox'];
  /** bwrap path and the per-executor part of its command line; null without bwrap. */
  sandbox: { bwrap: string; baseArgs: string[] } | null;
  /** One user per slot when running as root; empty otherwise. */
  users: SandboxUser[];
  /**
   * The uid sandbox's per-slot home (HOME, TMPDIR and caches point there): the slot
   * user's own, emptied after each test; none in the other sandboxes (bwrap's /tmp is private).
   */
  slotHomes: string[];
  /**
   * The uid sandbox's folders a slot uid can create files in (uid-leftovers.ts), searched
   * after each test; empty in the other sandboxes.
   */
  writableDirs: string[];
}

export interface SandboxHostOptions<Files extends object> extends Omit<ColdExecutorOptions, keyof ExecutorSettings>, ExecutorSettings {
  /** Puts the executor's own files in the new run directory; what it returns joins the host. */
  populate(runDir: string, users: readonly SandboxUser[]): Promise<Files>;
}

/** Sets the host up; the run directory is removed again when any step fails. */
export async function prepareSandboxHost<Files extends object>(options: SandboxHostOptions<Files>): Promise<SandboxHost & Files> {
  const { warn } = options;
  const mode: SandboxMode = options.unsafeNoSandbox ? 'none' : (options.sandbox ?? 'auto');
  const root = runningAsRoot();
  if (mode === 'uid' && !root) {
    throw new Error('rcb: the uid sandbox (--sandbox uid) needs rcb to run as root: it gives each slot a uid of its own');
  }
  const bwrap = mode === 'bwrap' || mode === 'auto' ? findBwrap(options.bwrap) : null;
  if (mode === 'bwrap' && !bwrap) throw missingBwrapError();
  if (mode === 'auto' && !bwrap && !root) throw noSandboxError('bubblewrap (bwrap) is not installed');
  if (mode === 'none') warn('rcb: running tests WITHOUT a sandbox (unsafeNoSandbox): generated code can reach your files and network');

  const parent = options.tmpDir ?? tmpdir();
  await removeStaleRunDirs(parent).catch(() => undefined);
  const runDir = await createRunDir(parent);
  const users = root ? allocateSandboxUsers(options.jobs) : [];
  // The walk for writable folders takes seconds on a large disk: begun now when uid is asked for.
  if (mode === 'uid') void writableDirsForSandbox(warn);
  try {
    const files = await options.populate(runDir, users);
    const etc = join(runDir, 'etc');
    await mkdir(etc, { mode: 0o755 });
    await writeFile(join(etc, 'passwd'), passwdText(users), { mode: 0o644 });
    await writeFile(join(etc, 'group'), groupText(users), { mode: 0o644 });

    const probeEnv = sandboxEnvironment({ allow: options.envAllow, warn });
    const python = await probePython(options.python, { env: probeEnv, uid: users[0]?.uid, gid: users[0]?.gid }).catch((error: Error) => {
      // A missing interpreter is only that; the hint is for one a sandbox user cannot read.
      if (!users[0] || /\bENOENT\b/.test(error.message)) throw error;
      throw new Error(
        `${error.message} (tests run as the unprivileged uid ${users[0].uid}, so the interpreter and its ` +
          'libraries must be readable by every user: not under /root, say)',
      );
    });
    const env = sandboxEnvironment({ allow: options.envAllow, interpreterDir: dirname(python.executable) });
    const torchHome = testTorchHome(python);
    if (torchHome && env.TORCH_HOME === undefined) env.TORCH_HOME = torchHome;

    let sandbox: SandboxHost['sandbox'] = null;
    let kind: SandboxHost['kind'] = mode === 'none' ? 'none' : 'uid';
    if (bwrap) {
      try {
        const baseArgs = sandboxBaseArgs({
          bwrapOptions: await bwrapOptions(bwrap),
          python,
          env,
          passwdFile: join(etc, 'passwd'),
          groupFile: join(etc, 'group'),
          tmpfsBytes: options.maxFileMb * 1024 * 1024,
          runDir,
          warn,
        });
        await checkSandbox(bwrap, baseArgs, users[0]);
        sandbox = { bwrap, baseArgs };
        kind = 'bwrap';
      } catch (error) {
        if (mode === 'bwrap') throw error;
        if (!root) throw noSandboxError((error as Error).message.replace(/^rcb: /, ''));
        warn(`rcb: ${(error as Error).message.replace(/^rcb: /, '')}; using the uid sandbox instead (--sandbox auto)`);
      }
    } else if (mode === 'auto') {
      warn('rcb: bubblewrap (bwrap) is not installed; using the uid sandbox (--sandbox auto, rcb runs as root)');
    }
    const slotHomes = kind === 'uid' ? await makeSlotHomes(runDir, users) : [];
    const writableDirs = kind === 'uid' ? (await writableDirsForSandbox(warn)).dirs : [];
    return { ...files, runDir, python, env, kind, sandbox, users, slotHomes, writableDirs };
  } catch (error) {
    await rm(runDir, { recursive: true, force: true });
    releaseSandboxUsers(users);
    throw error;
  }
}

/**
 * The tests' TORCH_HOME: the `assets/torch` folder of the interpreter's environment, where
 * `rcb env install` puts the checkpoints a paper's test would download (torch.hub; REPA-E's
 * VGG16 weights: container/requirements-assets.json), when it exists. It lies under the
 * environment's prefix, which both sandboxes already give the tests read-only.
 */
export function testTorchHome(python: Pick<PythonInfo, 'prefix'>): string | null {
  const dir = join(python.prefix, 'assets', 'torch');
  return existsSync(dir) ? dir : null;
}

/** Neither sandbox can be had: bubblewrap cannot start, and rcb is not root. */
function noSandboxError(why: string): Error {
  return new Error(
    `rcb: no sandbox for the tests here: ${why}, and the uid sandbox (--sandbox uid) needs rcb to run as root. ` +
      'Install or enable bubblewrap (apt-get install bubblewrap; unprivileged user namespaces), run rcb as root for ' +
      'the uid sandbox, or pass --unsafe-no-sandbox to run tests without one.',
  );
}

/** One home per slot, owned by its user, in a parent the users cannot write. */
async function makeSlotHomes(runDir: string, users: readonly SandboxUser[]): Promise<string[]> {
  const homes = join(runDir, 'home');
  await mkdir(homes, { mode: 0o711 });
  const dirs: string[] = [];
  for (const [i, user] of users.entries()) {
    const dir = join(homes, String(i));
    await mkdir(dir, { mode: 0o700 });
    await chown(dir, user.uid, user.gid);
    dirs.push(dir);
  }
  return dirs;
}

/** The environment of slot `slot`'s tests: in the uid sandbox, its home for HOME, TMPDIR and caches. */
export function slotEnvironment(host: Pick<SandboxHost, 'env' | 'slotHomes'>, slot: number): Record<string, string> {
  const home = host.slotHomes[slot];
  if (home === undefined) return host.env;
  return { ...host.env, HOME: home, TMPDIR: home, XDG_CACHE_HOME: join(home, '.cache'), MPLCONFIGDIR: join(home, '.config', 'matplotlib') };
}
