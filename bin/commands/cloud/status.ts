/**
 * `rcb cloud status RUN [--emulate] [--wait]`: the run's latest execution and its progress;
 * `--wait` follows it to its end and exits as `rcb cloud run` would (0 succeeded, 4 succeeded
 * with errors, 3 budget stopped, 1 failed or cancelled).
 */
import { UsageError } from '../common';
import { findStackOutputs, stackAdapters, stackExecutions, type CloudDeps } from '../../../app/deployed-stack';
import type { StackFlags } from './stack-flags';
import { withEmulatedStack, type EmulateFlags } from './emulated-stack-flags';
import { describeRunStatus } from '../../../core/cloud/run-status';
import { waitForRun } from '../../../core/cloud/watch-run';
import type { BlobStore } from '../../../core/store';

export async function cloudStatus(runId: string, opts: StackFlags & EmulateFlags & { wait?: boolean }, deps: CloudDeps): Promise<number> {
  const report = async (ports: Parameters<typeof describeRunStatus>[0] & { blobs: BlobStore }, where: string): Promise<number> => {
    if (opts.wait) {
      const code = await waitForRun({ ...ports, note: deps.err, print: deps.out, sleep: deps.sleep, pollMs: deps.pollMs }, runId);
      if (code === null) throw new UsageError(`no execution of run ${runId} in ${where}`);
      return code;
    }
    const lines = await describeRunStatus(ports, runId);
    if (!lines) throw new UsageError(`no run ${runId} in ${where}`);
    deps.out(`${lines.join('\n')}\n`);
    return 0;
  };
  if (opts.emulate) return withEmulatedStack(opts, (stack, where) => report(stack, where));
  const outputs = await findStackOutputs(deps.cfn, opts.stackName);
  const { store, counters, environments, blobs } = stackAdapters(deps, outputs);
  return report({ store, counters, environments, blobs, executions: stackExecutions(deps, outputs) }, `stack ${opts.stackName}`);
}
