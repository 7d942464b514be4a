/**
 * What the executors signal: every process a candidate started ends with its test, and
 * nothing else does. Unrelated processes (of the same user, and as root of other users, one
 * of them a uid of another rcb process's block) are started before runs of hostile
 * candidates (a fork bomb within its limit, orphans, a double-forked daemon, a process
 * group of its own, a test that overruns its time with a daemon up, and as root one that
 * signals -1 and its parent) through both executors, with and without bubblewrap. After
 * each run every unrelated process is alive and no candidate process is left. As root,
 * the runs without a sandbox are also made by an unprivileged user (no slot users then),
 * the case of a laptop.
 */
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runningAsRoot } from '../../adapters/executor/sandbox-users';
import { readableBundle } from '../helpers/readable-bundle';
import { runContainmentTrial, type TrialConfig, type TrialOutcome } from './support/containment-trial';

jest.setTimeout(240_000);

const ROOT = runningAsRoot();
const NOBODY = 65534;

/** The trial in a child process as the unprivileged user `nobody`. */
function trialAsNobody(config: TrialConfig): Promise<TrialOutcome> {
  const home = mkdtempSync(join(tmpdir(), 'rcb-contain-nobody-'));
  chmodSync(home, 0o777);
  return new Promise<TrialOutcome>((resolve, reject) => {
    execFile(
      process.execPath,
      // A bundle in a folder nobody can read: the checkout may be one it cannot enter.
      [readableBundle(join(__dirname, 'support', 'contain-as-user.ts')), JSON.stringify(config)],
      {
        cwd: '/',
        uid: NOBODY,
        gid: NOBODY,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TMPDIR: home },
        timeout: 180_000,
        maxBuffer: 64 << 20,
      },
      (error, stdout, stderr) => {
        rmSync(home, { recursive: true, force: true });
        if (error) return reject(new Error(`${error.message}\n${stderr}`));
        resolve(JSON.parse(stdout.trim().split('\n').pop()!) as TrialOutcome);
      },
    );
  });
}

const CONFIGS = [
  { executor: 'warm', warm: true, unsafeNoSandbox: true, user: 'rcb’s' },
  { executor: 'cold', warm: false, unsafeNoSandbox: true, user: 'rcb’s' },
  { executor: 'warm', warm: true, unsafeNoSandbox: false, user: 'rcb’s' },
  { executor: 'cold', warm: false, unsafeNoSandbox: false, user: 'rcb’s' },
  ...(ROOT
    ? ([
        { executor: 'warm', warm: true, unsafeNoSandbox: true, user: 'nobody' },
        { executor: 'cold', warm: false, unsafeNoSandbox: true, user: 'nobody' },
      ] as const)
    : []),
] as const;

describe.each(CONFIGS)('$executor executor, unsafeNoSandbox $unsafeNoSandbox, as $user user', ({ warm, unsafeNoSandbox, user }) => {
  let outcome: TrialOutcome;
  const byName = (name: string) => outcome.results.find((r) => r.name === name)!;

  beforeAll(async () => {
    // Prepare and act: the trial starts the unrelated processes, then runs the candidates.
    outcome = user === 'nobody' ? await trialAsNobody({ warm, unsafeNoSandbox }) : await runContainmentTrial({ warm, unsafeNoSandbox });
  });

  it('ran every hostile case up to the point where it had left processes behind', () => {
    // In bwrap, the warm server relaying a test's output is in the test's reach (same uid, same
    // namespace): the cases that signal it may take their last output with the sandbox.
    const relayLost = (name: string) => warm && !unsafeNoSandbox && name.startsWith('signals-');
    const checked = outcome.names.filter((name) => !relayLost(name));
    const ready = checked.map((name) => [name, byName(name).stdout.includes(`READY ${name}`)]);
    expect(ready).toEqual(checked.map((name) => [name, true]));
    expect(byName('overruns-with-daemon').killedFor).toBe('timeout');
  });

  if (ROOT && unsafeNoSandbox && user !== 'nobody') {
    it('runs the tests as a slot user that cannot signal its supervisor', () => {
      expect(byName('signals-parent').stdout).toContain('PARENT PermissionError');
    });
  }

  it('leaves every unrelated process alive', () => {
    expect(outcome.unrelated).toEqual(outcome.unrelated.map(([name]) => [name, true]));
    expect(outcome.unrelated.length).toBeGreaterThanOrEqual(2);
  });

  it('leaves no process any candidate started', () => {
    expect(outcome.leftovers).toEqual([]);
  });
});
