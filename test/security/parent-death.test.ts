/**
 * rcb killed mid-test (SIGKILL, the OOM killer, a closed terminal) leaves no process of
 * the test behind: without a pid namespace, the supervisor (rcb_contain.py for a cold
 * test, the warm server) gets SIGTERM when rcb dies and ends every descendant; with
 * bubblewrap the namespace goes with bwrap (--die-with-parent). Before, a fork bomb whose
 * rcb was killed by a timeout filled the machine's process table until someone noticed.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runningAsRoot } from '../../adapters/executor/sandbox-users';
import { REPO } from '../helpers/cli';
import { readableBundle } from '../helpers/readable-bundle';
import { boundAfter } from '../helpers/machine-speed';
import { processesWith } from '../fixtures/executor/tiny-paper';

// The deadline of a hang: the waits below end at their event.
jest.setTimeout(600_000);

const NOBODY = 65534;
const CONFIGS: { executor: string; warm: boolean; unsafeNoSandbox: boolean; user: 'rcb’s' | 'nobody' }[] = [
  { executor: 'warm', warm: true, unsafeNoSandbox: true, user: 'rcb’s' },
  { executor: 'cold', warm: false, unsafeNoSandbox: true, user: 'rcb’s' },
  { executor: 'warm', warm: true, unsafeNoSandbox: false, user: 'rcb’s' },
  { executor: 'cold', warm: false, unsafeNoSandbox: false, user: 'rcb’s' },
  // As root, also rcb run by an unprivileged user (a laptop: no slot users, whose uid
  // could be swept later): only the supervisor can end what the test left.
  ...(runningAsRoot()
    ? [
        { executor: 'warm', warm: true, unsafeNoSandbox: true, user: 'nobody' as const },
        { executor: 'cold', warm: false, unsafeNoSandbox: true, user: 'nobody' as const },
      ]
    : []),
];

async function until(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

describe.each(CONFIGS)('$executor executor, unsafeNoSandbox $unsafeNoSandbox, as $user user', ({ warm, unsafeNoSandbox, user }) => {
  let home: string | undefined;
  afterEach(() => home && rmSync(home, { recursive: true, force: true }));

  it('ends the test and the daemon it left when rcb is SIGKILLed mid-test', async () => {
    const mark = `rcb-parent-death-${randomBytes(6).toString('hex')}`;
    const asNobody = user === 'nobody';
    if (asNobody) {
      home = mkdtempSync(join(tmpdir(), 'rcb-parent-death-'));
      chmodSync(home, 0o777);
    }
    // As nobody, a bundle in a folder any user can read (the checkout may be one it cannot
    // enter); else tsx as a loader in this one process (its cli would leave a child that outlives the kill).
    const script = join(__dirname, 'support', 'die-mid-test.ts');
    const rcb = spawn(
      process.execPath,
      [
        ...(asNobody ? [readableBundle(script)] : ['-r', join(REPO, 'node_modules', 'tsx', 'dist', 'cjs', 'index.cjs'), script]),
        JSON.stringify({ warm, unsafeNoSandbox }),
      ],
      // The marker travels in the environment, so that only the candidate's processes carry it in argv.
      {
        cwd: asNobody ? '/' : REPO,
        stdio: ['ignore', 'ignore', 'pipe'],
        env: asNobody ? { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TMPDIR: home, RCB_TEST_MARK: mark } : { ...process.env, RCB_TEST_MARK: mark },
        ...(asNobody ? { uid: NOBODY, gid: NOBODY } : {}),
      },
    );
    let stderr = '';
    rcb.stderr.setEncoding('utf8');
    rcb.stderr.on('data', (d: string) => (stderr += d));
    const exited = new Promise((resolve) => rcb.once('exit', resolve));
    // Both the test and its daemon are up (a hang's deadline: the test's own).
    const spawnedAt = performance.now();
    const started = await until(() => processesWith(mark).length >= 2 || rcb.exitCode !== null, 540_000);
    // The reference: rcb started and its test's processes up, on this machine now.
    const startMs = performance.now() - spawnedAt;
    expect({ started, stderr }).toEqual({ started: true, stderr: expect.any(String) });
    expect(rcb.exitCode).toBeNull();
    rcb.kill('SIGKILL');
    await exited;
    // Gone at once, in the kernel's time: within ten starts of the same processes, however loaded the machine.
    const gone = await until(() => processesWith(mark).length === 0, boundAfter(0, startMs));
    expect({ left: processesWith(mark), gone }).toEqual({ left: [], gone: true });
  });
});
