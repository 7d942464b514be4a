/** `rcb cloud status RUN [--emulate]`: the run's latest execution and its progress. */
import { UsageError } from '../common';
import { findStackOutputs, stackAdapters, stackExecutions, type CloudDeps } from '../../../app/deployed-stack';
import type { StackFlags } from './stack-flags';
import { withEmulatedStack, type EmulateFlags } from './emulated-stack-flags';
import { describeRunStatus } from '../../../core/cloud/run-status';

export async function cloudStatus(runId: string, opts: StackFlags & EmulateFlags, deps: CloudDeps): Promise<number> {
  const report = async (ports: Parameters<typeof describeRunStatus>[0], where: string): Promise<number> => {
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
