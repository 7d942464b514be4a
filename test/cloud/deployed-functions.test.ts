/**
 * The emulator's Lambda runtime stand-in (FunctionProcesses) on a hand-written bundle: the
 * invocation's timeout is counted from the handler's load, as Lambda counts it, not from the
 * instance's start; past it, the instance is stopped and the invocation fails as Lambda's does.
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
