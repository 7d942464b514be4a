/**
 * The emulated cloud's state folder (emulator/emulator-state.ts): execution records that
 * outlive the command, one command at a time, and a stale lock taken over with its
 * execution aborted.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startOrFollow } from '../../core/cloud/execution-attempts';
import { EmulatorState, StateInUseError } from '../../emulator/emulator-state';

const dir = () => mkdtempSync(join(tmpdir(), 'rcb-emulator-state-'));

describe('EmulatorState', () => {
  it("keeps each execution's record for the next command, and names the next attempt after a failed one", async () => {
    // Prepare
    const root = dir();
    const first = EmulatorState.open(root);
    expect(await startOrFollow(first, 'run1')).toMatchObject({ name: 'run1', started: true });
    first.finish('run1', { status: 'FAILED', error: 'States.TaskFailed', cause: 'shard p' });
    first.close();

    // Act
    const second = EmulatorState.open(root);
    const attempt = await startOrFollow(second, 'run1');
    second.finish(attempt.name, { status: 'SUCCEEDED' });
    const third = await startOrFollow(second, 'run1');
    second.close();

    // Assess
    expect(attempt).toEqual({ name: 'run1-2', attempt: 2, started: true, earlier: ['FAILED'] });
    expect(third).toMatchObject({ name: 'run1-2', started: false });
    const reopened = EmulatorState.open(root);
    expect(await reopened.describe('run1')).toMatchObject({
      status: 'FAILED',
      error: 'States.TaskFailed',
      cause: 'shard p',
      startDate: expect.any(Date),
      stopDate: expect.any(Date),
    });
    expect(await reopened.status('run1-2')).toBe('SUCCEEDED');
    expect(await reopened.describe('run1-3')).toBeNull();
    reopened.close();
  });

  it('refuses a folder another live process holds, naming it', async () => {
    const root = dir();
    const holder = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      await new Promise((resolve) => holder.once('spawn', resolve));
      const stat = readFileSync(`/proc/${holder.pid}/stat`, 'utf8');
      const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
      EmulatorState.open(root).close();
      writeFileSync(join(root, 'lock'), JSON.stringify({ pid: holder.pid, start }));

      expect(() => EmulatorState.open(root)).toThrow(StateInUseError);
      expect(() => EmulatorState.open(root)).toThrow(`is in use by process ${holder.pid}`);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('takes over the lock of an owner that exited, and aborts the execution it left running', async () => {
    // Prepare: an owner that started an execution and died (its pid now gone).
    const root = dir();
    const owner = EmulatorState.open(root);
    await owner.start('run1');
    const gone = spawnSync('true');
    expect(gone.pid).toBeGreaterThan(0);
    writeFileSync(join(root, 'lock'), JSON.stringify({ pid: gone.pid, start: '1' }));

    // Act
    const next = EmulatorState.open(root);

    // Assess
    expect(await next.describe('run1')).toMatchObject({
      status: 'ABORTED',
      error: 'EmulatorStopped',
      cause: `the emulator that ran it (process ${gone.pid}) stopped before it ended`,
    });
    expect(await startOrFollow(next, 'run1')).toMatchObject({ name: 'run1-2', started: true, earlier: ['ABORTED'] });
    next.close();
  });

  it('aborts on close an execution this process started and did not finish', async () => {
    const root = dir();
    const state = EmulatorState.open(root);
    await state.start('run1');
    state.close();

    const next = EmulatorState.open(root);
    expect(await next.describe('run1')).toMatchObject({ status: 'ABORTED', error: 'EmulatorError' });
    expect(await startOrFollow(next, 'run1')).toMatchObject({ name: 'run1-2', started: true });
    next.close();
  });

  it('keeps records in memory without a folder', async () => {
    const state = EmulatorState.open();
    expect(await state.start('r')).toBe(true);
    expect(await state.start('r')).toBe(false);
    state.finish('r', { status: 'SUCCEEDED' });
    expect(await state.status('r')).toBe('SUCCEEDED');
    expect(state.dynamoDir).toBeUndefined();
  });
});
