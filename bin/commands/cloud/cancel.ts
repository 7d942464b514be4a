/** `rcb cloud cancel RUN [--now]`: stop a run's model calls (core/cloud/cancel-run.ts). */
import { UsageError } from '../common';
import { findStackOutputs, stackAdapters, stackExecutions, type CloudDeps } from '../../../app/deployed-stack';
import type { StackFlags } from './stack-flags';
import { cancelRun } from '../../../core/cloud/cancel-run';

export async function cloudCancel(runId: string, opts: StackFlags & { now?: boolean }, deps: CloudDeps): Promise<number> {
  const outputs = await findStackOutputs(deps.cfn, opts.stackName);
  const { store } = stackAdapters(deps, outputs);
  const outcome = await cancelRun({ store, executions: stackExecutions(deps, outputs) }, runId, { now: opts.now });
  if (outcome.kind === 'no-run') throw new UsageError(`no run ${runId} in stack ${opts.stackName}`);
  deps.err(`${outcome.message}\n`);
  return outcome.exitCode;
}
