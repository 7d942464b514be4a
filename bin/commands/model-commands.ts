/** `rcb models`, `rcb estimate`, and the registry behind hosted `--model` ids. */
import { formatModelList } from '../../adapters/models/registry';
import { hostedModels, loadEntries } from '../../app/models';
import { estimateRun, formatEstimates, formatInfraEstimate } from '../../app/estimate';
import { UsageError } from './common';
import { resolveRun, type RunSpecFlags } from './resolve-run';

export function modelsCommand(opts: { modelsFile?: string }): number {
  process.stdout.write(formatModelList(loadEntries(opts.modelsFile)));
  return 0;
}

export type EstimateOptions = Omit<RunSpecFlags, 'timeout'> & { modelsFile?: string };

export function estimateCommand(opts: EstimateOptions): number {
  if (!opts.model.length) throw new UsageError('name at least one registry model with --model (see `rcb models`)');
  const hosted = hostedModels(opts.modelsFile);
  // The same reading of the flags as `rcb run`, so the estimate is of the run that command would make.
  const run = resolveRun({ ...opts, timeout: '60' }, hosted);
  const free = opts.model.filter((id) => !run.models.costs.has(id));
  if (free.length) throw new UsageError(`not registry models (offline models cost nothing): ${free.join(', ')}`);
  const estimates = estimateRun(hosted, opts.model, run.pset, run.template, opts.paper, run.samples, run.temperature, (line) =>
    process.stderr.write(`${line}\n`),
  );
  process.stdout.write(formatEstimates(estimates, run.budgetUsd));
  const providers = opts.model.map((id) => ({ provider: hosted.entry(id)?.provider ?? null, callSec: hosted.entry(id)?.call_sec }));
  process.stdout.write(`\nin the cloud (rcb cloud run):\n${formatInfraEstimate(run.pset, providers, run.samples)}`);
  return 0;
}
