/**
 * What both local executors set up on the host before the first candidate: the run
 * directory (after removing those of dead rcb processes), one sandbox user per slot (when root), their /etc/passwd and /etc/group,
 * the interpreter probed as the test user, the tests' environment, and the bubblewrap
 * command line checked by starting an empty sandbox once.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { sandboxEnvironment } from './environment';
import type { ColdExecutorOptions, ExecutorSettings } from './executor-options';
import { probePython, type PythonInfo } from './python';
import { createRunDir, removeStaleRunDirs } from './run-dir';
import { bwrapOptions, checkSandbox, findBwrap, missingBwrapError, sandboxBaseArgs } from './sandbox';
import { allocateSandboxUsers, groupText, passwdText, releaseSandboxUsers, runningAsRoot, type SandboxUser } from './sandbox-users';

export interface SandboxHost {
  runDir: string;
  python: PythonInfo;
  env: Record<string, string>;
  /** bwrap path and the per-executor part of its command line; null without sandbox. */
  sandbox: { bwrap: string; baseArgs: string[] } | null;
  /** One user per slot when running as root; empty otherwise. */
  users: SandboxUser[];
}

export interface SandboxHostOptions<Files extends object>
  extends Omit<ColdExecutorOptions, keyof ExecutorSettings>,
    ExecutorSettings {
  /** Puts the executor's own files in the new run directory; what it returns joins the host. */
  populate(runDir: string, users: readonly SandboxUser[]): Promise<Files>;
}

/** Sets the host up; the run directory is removed again when any step fails. */
export async function prepareSandboxHost<Files extends object>(
  options: SandboxHostOptions<Files>,
): Promise<SandboxHost & Files> {
  const { warn } = options;
  const bwrap = options.unsafeNoSandbox ? null : findBwrap(options.bwrap);
  if (!bwrap && !options.unsafeNoSandbox) throw missingBwrapError();
  if (!bwrap) warn('rcb: running tests WITHOUT a sandbox (unsafeNoSandbox): generated code can reach your files and network');

  const parent = options.tmpDir ?? tmpdir();
  await removeStaleRunDirs(parent).catch(() => undefined);
  const runDir = await createRunDir(parent);
  const users = runningAsRoot() ? allocateSandboxUsers(options.jobs) : [];
  try {
    const files = await options.populate(runDir, users);
    const etc = join(runDir, 'etc');
    await mkdir(etc, { mode: 0o755 });
    await writeFile(join(etc, 'passwd'), passwdText(users), { mode: 0o644 });
    await writeFile(join(etc, 'group'), groupText(users), { mode: 0o644 });

    const probeEnv = sandboxEnvironment({ allow: options.envAllow, warn });
    const python = await probePython(options.python, { env: probeEnv, uid: users[0]?.uid, gid: users[0]?.gid }).catch(
      (error: Error) => {
        if (!users[0]) throw error;
        throw new Error(
          `${error.message} (tests run as the unprivileged uid ${users[0].uid}, so the interpreter and its ` +
            'libraries must be readable by every user: not under /root, say)',
        );
      },
    );
    const env = sandboxEnvironment({ allow: options.envAllow, interpreterDir: dirname(python.executable) });

    let sandbox: SandboxHost['sandbox'] = null;
    if (bwrap) {
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
    }
    return { ...files, runDir, python, env, sandbox, users };
  } catch (error) {
    await rm(runDir, { recursive: true, force: true });
    releaseSandboxUsers(users);
    throw error;
  }
}
