/**
 * The emulator's Lambda runtime stand-in (FunctionProcesses) on a hand-written bundle: the
 * invocation's timeout is counted from the handler's load, as Lambda counts it, not from the
 * instance's start; past it, the instance is stopped and the invocation fails as Lambda's does.
 * A deploy of the function's configuration runs later invocations in new instances.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FunctionProcesses, type DeployedFunction } from '../../emulator/deployed-functions';
import { tempDir } from '../helpers/cli';

const TIMEOUT_SEC = 2;

/**
 * A bundle whose module takes longer to load than the function's timeout (a wait, not CPU
 * work, so the same on a busy machine), then answers `{ pid }` at once, or never for `{ hang: true }`.
 */
function slowLoadingFunction(): DeployedFunction {
  const assetDir = join(tempDir('rcb-deployed-fn-'), 'asset');
  mkdirSync(assetDir, { recursive: true });
  writeFileSync(
    join(assetDir, 'index.js'),
    [
      `Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ${TIMEOUT_SEC * 1000 + 1000});`,
      'exports.handler = async (event) => (event.hang ? new Promise(() => undefined) : { pid: process.pid });',
    ].join('\n'),
  );
  return { logicalId: 'SlowInitFunction', assetDir, handler: 'index.handler', timeoutSec: TIMEOUT_SEC, memoryMiB: 128, environment: {} };
}

describe('FunctionProcesses', () => {
  let processes: FunctionProcesses;
  beforeEach(() => {
    processes = new FunctionProcesses({ fn: slowLoadingFunction(), root: tempDir('rcb-deployed-root-'), env: {} });
  });
  afterEach(async () => {
    await processes.close();
  });

  it('does not count a cold start against the invocation: a module that loads longer than the timeout still answers', async () => {
    const first = (await processes.invoke({})) as { pid: number };
    // Warm: the same instance answers the next invocation.
    expect(await processes.invoke({})).toEqual({ pid: first.pid });
  });

  it('stops the instance of an invocation past its timeout and fails it with Sandbox.Timedout', async () => {
    const { pid } = (await processes.invoke({})) as { pid: number };

    await expect(processes.invoke({ hang: true })).rejects.toMatchObject({
      name: 'Sandbox.Timedout',
      message: `SlowInitFunction: task timed out after ${TIMEOUT_SEC}.00 seconds`,
    });

    // The instance is gone; the next invocation starts another.
    const next = (await processes.invoke({})) as { pid: number };
    expect(next.pid).not.toBe(pid);
  });
});

/**
 * A bundle that answers its pid and the variable X of its environment, once the file named by
 * `event.release` exists (when given): an invocation held in flight until the test lets it go.
 */
function environmentFunction(): DeployedFunction {
  const assetDir = join(tempDir('rcb-deployed-fn-'), 'asset');
  mkdirSync(assetDir, { recursive: true });
  writeFileSync(
    join(assetDir, 'index.js'),
    [
      "const { existsSync } = require('node:fs');",
      'exports.handler = async (event) => {',
      '  while (event.release && !existsSync(event.release)) await new Promise((r) => setTimeout(r, 20));',
      '  return { pid: process.pid, x: process.env.X };',
      '};',
    ].join('\n'),
  );
  return { logicalId: 'EnvFunction', assetDir, handler: 'index.handler', timeoutSec: 600, memoryMiB: 128, environment: {} };
}

/** Resolves once no process has this pid (the retired instance has exited). */
async function exited(pid: number): Promise<void> {
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((r) => setImmediate(r));
  }
}

describe('FunctionProcesses.updateEnvironment (a deploy of the function configuration)', () => {
  it('runs later invocations in new instances with the new environment, and retires the old ones after their invocation', async () => {
    // Prepare
    const processes = new FunctionProcesses({ fn: environmentFunction(), root: tempDir('rcb-deployed-root-'), env: { X: 'before' } });
    const release = join(tempDir('rcb-deployed-release-'), 'go');
    try {
      const idle = (await processes.invoke({})) as { pid: number; x: string };
      // The held invocation takes the warm instance, which started with the old environment.
      const held = processes.invoke({ release });
      expect(idle.x).toBe('before');

      // Act: the deploy, while an invocation is in flight.
      processes.updateEnvironment({ X: 'after' });
      const next = (await processes.invoke({})) as { pid: number; x: string };
      writeFileSync(release, '');
      const finished = (await held) as { pid: number; x: string };

      // Assess
      expect(processes.environment.X).toBe('after');
      expect(next.x).toBe('after');
      expect(finished).toEqual({ pid: idle.pid, x: 'before' });
      expect(next.pid).not.toBe(idle.pid);
      await exited(finished.pid);
      const again = (await processes.invoke({})) as { pid: number; x: string };
      expect(again).toEqual({ pid: next.pid, x: 'after' });
    } finally {
      await processes.close();
    }
  });
});
