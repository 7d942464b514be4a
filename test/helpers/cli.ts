/**
 * Running the rcb command line as a user would: a child process of `node dist/bin/rcb.js`
 * when dist/ was built from the sources as they are (`npm test` builds it before jest; see
 * scripts/build-stamp.ts), else of the TypeScript sources through tsx, so that a test run
 * right after an edit needs no build; with a clean temp folder per test.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync } from 'node:fs';
import { findBwrap } from '../../adapters/executor/sandbox';
import { fargateLikeHost } from '../security/support/fargate-like-host';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { distIsCurrent } from '../../scripts/build-stamp';

export const REPO = resolve(__dirname, '..', '..');
export const PSET_MINI = join(REPO, 'examples', 'pset-mini');
const ENTRY = join(REPO, 'bin', 'rcb.ts');
const TSX = require.resolve('tsx/cjs');
const BUILT = join(REPO, 'dist', 'bin', 'rcb.js');

let cachedCommand: string[] | undefined;
/**
 * The argv that starts rcb: the build when it is current, else the sources through tsx (said
 * once per test process, as the fallback costs the suite minutes of CPU).
 */
export function rcbCommand(): string[] {
  if (cachedCommand) return cachedCommand;
  if (distIsCurrent(REPO)) return (cachedCommand = [process.execPath, BUILT]);
  process.stderr.write('rcb tests: dist/ is not built from the current sources (npm run build), so rcb runs through tsx\n');
  return (cachedCommand = [process.execPath, '-r', TSX, ENTRY]);
}

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function tempDir(prefix = 'rcb-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/**
 * The tests' rcb sees no `rcb env install` environment left on the machine (its interpreter
 * would replace /usr/bin/python3 as the default): a test that wants one names it.
 */
const NO_INSTALLED_ENV = { RCB_ENV_DIR: join(tmpdir(), 'rcb-tests-no-installed-env') };

export function rcb(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): CliResult {
  const [node, ...entry] = rcbCommand();
  const r = spawnSync(node, [...entry, ...args], {
    cwd: opts.cwd ?? REPO,
    env: { ...process.env, ...NO_INSTALLED_ENV, ...opts.env },
    encoding: 'utf8',
    // The deadline of a hang, not a bound on speed: a run that takes 30 s alone takes minutes on a loaded machine.
    timeout: opts.timeoutMs ?? 600_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * `rcb ARGS` as a child process. With RCB_TEST_HOST=fargate-like in the environment (see
 * test/reliability/fargate-like-host.test.ts), rcb runs on the Fargate-like host instead
 * (test/security/support/fargate-like-host.ts), with RCB_SANDBOX=uid; the temp folder is
 * its writable scratch, and killing the child kills the whole host.
 */
export function rcbAsync(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): ChildProcess {
  const command = [...rcbCommand(), ...args];
  const env = { ...process.env, ...NO_INSTALLED_ENV, ...opts.env };
  if (process.env.RCB_TEST_HOST === 'fargate-like') {
    const host = fargateLikeHost(tmpdir(), command);
    const child = spawn(findBwrap() ?? 'bwrap', host.args, {
      cwd: opts.cwd ?? REPO,
      env: { ...env, RCB_SANDBOX: 'uid' },
      stdio: ['ignore', 'pipe', 'pipe', host.seccompFd],
    });
    closeSync(host.seccompFd);
    return child;
  }
  return spawn(command[0], command.slice(1), { cwd: opts.cwd ?? REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
}
