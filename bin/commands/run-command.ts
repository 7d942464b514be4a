/** `rcb run`: the whole benchmark on this machine (app/local-run.ts); flags in, the outcome printed. */
import type { HostedModels } from '../../adapters/models/hosted-models';
import { runLocally } from '../../app/local-run';
import { batchModelIds } from '../../app/models';
import { parseNumber, UsageError } from './common';
import { localRunOptions, printLocalRun, type LocalRunFlags } from './local-run-cli';
import { resolveRun, type RunSpecFlags } from './resolve-run';

export interface RunOptions extends RunSpecFlags, LocalRunFlags {
  modelsFile?: string;
  /** Every hosted model through its provider's batch API. */
  batch?: boolean;
  batchPoll?: string;
  cancelBatches?: boolean;
}

export async function runCommand(opts: RunOptions, hosted: HostedModels): Promise<number> {
  const resolved = resolveRun(opts, hosted);
  if (opts.cancelBatches && !opts.batch) throw new UsageError('--cancel-batches goes with --batch (the same flags as the run whose batches to cancel)');
  const batch = opts.batch
    ? {
        models: new Set(batchModelIds(resolved.models, hosted, resolved.temperature)),
        pollSeconds: parseNumber('--batch-poll', opts.batchPoll ?? '60', 0),
        cancel: !!opts.cancelBatches,
      }
    : undefined;
  return printLocalRun(await runLocally(resolved, localRunOptions(opts, resolved, { batch }), hosted));
}
