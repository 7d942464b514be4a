/** `rcb cloud results RUN [--emulate]`: scores of a run, in the report formats of `rcb report`. */
import { parseReportFlags, UsageError } from '../common';
import { findStackOutputs, stackAdapters, type CloudDeps } from '../../../app/deployed-stack';
import type { StackFlags } from './stack-flags';
import { withEmulatedStack, type EmulateFlags } from './emulated-stack-flags';
import { readRunResults } from '../../../core/cloud/run-results';

export interface ResultsOptions extends StackFlags, EmulateFlags {
  format: string;
  judge?: string;
  subset: string;
}

export async function cloudResults(runId: string, opts: ResultsOptions, deps: CloudDeps): Promise<number> {
  // Flags are checked before any AWS call or server start.
  const flags = parseReportFlags(opts);
  const report = async (ports: Parameters<typeof readRunResults>[0], where: string): Promise<number> => {
    const results = await readRunResults(ports, runId, flags).catch((e: Error) => {
      throw new UsageError(e.message);
    });
    if (!results) throw new UsageError(`no run ${runId} in ${where}`);
    if (results.note) deps.err(`note: ${results.note}\n`);
    deps.out(results.text);
    return 0;
  };
  if (opts.emulate) return withEmulatedStack(opts, (stack, where) => report(stack, where));
  const outputs = await findStackOutputs(deps.cfn, opts.stackName);
  return report(stackAdapters(deps, outputs), `stack ${opts.stackName}`);
}
