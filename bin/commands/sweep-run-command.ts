/**
 * `rcb sweep run FILE [--emulate | --cloud]`: the sweep's run on this machine (resumable:
 * the same command goes on where it stopped), through the emulated cloud, or in the
 * deployed stack. rcb.ts loads this module when `rcb sweep run` is given, so its imports
 * (the emulator, the cloud command) are plain ones.
 */
import { runLocally } from '../../app/local-run';
import { LEADERBOARD } from '../../core/run/run-outputs';
import { buildReport } from '../../core/report/build-report';
import { localRunOptions, printLocalRun } from './local-run-cli';
import type { RunStore } from '../../core/store';
import type { RunRecord } from '../../core/records';
import type { BatchSettings } from '../../core/cloud/payloads';
import { defaultPython, openRunDir, parsePositiveInt, UsageError, writeRunId } from './common';
import { loadSweep, modelBudgetsOf, planSweep, sweepRunDir, sweepRunFlags, type LoadedSweep } from './sweep-commands';
import { emulateCloudRun } from '../../emulator/emulated-run';
import { defaultCloudDeps } from '../../app/deployed-stack';
import { cloudRun } from './cloud/run';

export interface SweepRunOptions {
  emulate?: boolean;
  cloud?: boolean;
  jobs?: string;
  python?: string;
  executor: string;
  concurrency: string;
  unsafeNoSandbox?: boolean;
  stackName: string;
  region?: string;
  /** Cancel the sweep's pending batches and keep what they answered. */
  cancelBatches?: boolean;
}

export async function sweepRunCommand(file: string, opts: SweepRunOptions): Promise<number> {
  if (opts.emulate && opts.cloud) throw new UsageError('--emulate and --cloud exclude each other');
  // The warm executor without a sandbox is refused here: it is not safe to run on a shared machine.
  if (opts.unsafeNoSandbox && (opts.emulate || opts.executor === 'warm'))
    throw new UsageError('--unsafe-no-sandbox is refused for sweeps with the warm executor or --emulate; use --executor cold');
  const loaded = loadSweep(file);
  process.stderr.write(planSweep(loaded).text);
  if (opts.emulate || opts.cloud) return cloudSweep(loaded, opts);
  const batchModels = new Set(loaded.sweep.models.filter((m) => m.mode === 'batch').map((m) => m.name));
  const settings = loaded.sweep.batch;
  const flags = {
    jobs: opts.jobs,
    python: opts.python,
    out: sweepRunDir(loaded.sweep, loaded.run),
    unsafeNoSandbox: opts.unsafeNoSandbox,
    concurrency: opts.concurrency,
    executor: opts.executor,
  };
  const local = localRunOptions(flags, loaded.run, {
    modelBudgets: modelBudgetsOf(loaded.sweep),
    quietEstimate: true,
    batch: batchModels.size
      ? {
          models: batchModels,
          pollSeconds: settings.pollSeconds,
          maxRounds: settings.maxRounds,
          retryInteractively: settings.retryInteractively,
          cancel: opts.cancelBatches,
        }
      : undefined,
  });
  return printLocalRun(await runLocally(loaded.run, local, loaded.hosted));
}

/**
 * The cloud (or its emulation) runs the sweep's spec with the run's total budget: the
 * generator there knows no per-model budget, so a sweep that needs one is refused, naming the
 * line. Batch-mode models go to the workflow's batch lane (the input's batch settings, which
 * `--cloud` hands to \`rcb cloud run\`), without interactive retries (the lane has no
 * interactive client); the deployed cloud also takes its models'
 * parameters from the deployed registry, so it refuses parameters the sweep changes.
 */
async function cloudSweep(loaded: LoadedSweep, opts: SweepRunOptions): Promise<number> {
  const { sweep } = loaded;
  const where = opts.emulate ? 'the emulated cloud' : 'the cloud';
  const problems = sweep.models.flatMap((m) => [
    ...(m.budgetUsd !== null
      ? [`${sweep.file}:${m.line}: ${m.name}: a per-model budget is not enforced in ${where}; only budget_usd of the whole sweep is`]
      : []),
    ...(opts.cloud && (m.name !== m.id || Object.keys(m.params).length)
      ? [`${sweep.file}:${m.line}: ${m.name}: the cloud takes parameters from its deployed registry; add the variant there instead of params/name here`]
      : []),
  ]);
  const firstBatch = sweep.models.find((m) => m.mode === 'batch');
  if (sweep.batch.retryInteractively && firstBatch) {
    problems.push(
      `${sweep.file}:${firstBatch.line}: ${firstBatch.name}: batch.retry_interactively is not available in ${where}: its batch lane resubmits in the next batch only`,
    );
  }
  if (problems.length) throw new UsageError(problems.join('\n'));
  if (opts.emulate) return emulatedSweep(loaded, opts);
  const flags = {
    ...sweepRunFlags(sweep),
    jobs: opts.jobs,
    python: opts.python,
    unsafeNoSandbox: opts.unsafeNoSandbox,
    concurrency: opts.concurrency,
    executor: opts.executor,
    stackName: opts.stackName,
    region: opts.region,
    batchSettings: sweepBatchSettings(loaded),
  };
  return cloudRun(flags, loaded.hosted, defaultCloudDeps(opts.region));
}

/** The workflow input's batch settings of the sweep's batch-mode models, if it has any. */
function sweepBatchSettings(loaded: LoadedSweep): BatchSettings | undefined {
  const models = loaded.sweep.models.filter((m) => m.mode === 'batch').map((m) => m.name);
  return models.length ? { models, maxRounds: loaded.sweep.batch.maxRounds } : undefined;
}

/**
 * The emulated cloud runs the sweep's spec; what it stored (run, tasks, answers, verdicts)
 * is then copied into the sweep's run directory, so that `rcb sweep status` and `rcb sweep
 * report` read it like a local run.
 */
async function emulatedSweep(loaded: LoadedSweep, opts: SweepRunOptions): Promise<number> {
  const { pset, template, spec, models, runId } = loaded.run;
  const started = Date.now();
  const batch = sweepBatchSettings(loaded);
  const emulated = await emulateCloudRun(
    { pset, templateText: template.text, spec, models: models.info, ...(batch ? { batch } : {}) },
    {
      python: opts.python ?? defaultPython(),
      jobs: opts.jobs ? parsePositiveInt('--jobs', opts.jobs) : undefined,
      // The deployed bundles carry the registry: the sweep's models file is synthesized into them.
      modelsFile: loaded.sweep.modelsFile ?? undefined,
      // The sweep's poll_seconds stands in for the deployed pause between batch rounds.
      batchPollMs: loaded.sweep.batch.pollSeconds * 1000,
      onState: (state) => process.stderr.write(`${state}\n`),
    },
  );
  const dir = sweepRunDir(loaded.sweep, loaded.run);
  const { store } = openRunDir(dir, true);
  try {
    const run = await emulated.store.getRun(emulated.runId);
    if (!run) throw new UsageError(`the emulated run ${runId} was not planned${emulated.error ? `: ${emulated.error.name}: ${emulated.error.message}` : ''}`);
    await copyRun(emulated.store, store, run);
    writeRunId(dir, runId);
    const copied = (await store.getRun(runId))!;
    if (emulated.succeeded)
      process.stdout.write(`\n${(await buildReport(store, runId, { format: LEADERBOARD.format, judge: LEADERBOARD.judge, subset: 'all' })).text}`);
    process.stdout.write(
      `\nsweep run ${copied.status} (emulated) in ${((Date.now() - started) / 1000).toFixed(1)}s, spend $${copied.spentUsd.toFixed(4)}\nrun directory: ${dir}\n`,
    );
    if (!emulated.succeeded) return 1;
    return copied.status === 'succeeded' ? 0 : copied.status === 'budget_exhausted' ? 3 : 1;
  } finally {
    await store.close();
    await emulated.close();
  }
}

/** A run's records from one store into another (first write wins, so copying again changes nothing). */
async function copyRun(from: RunStore, to: RunStore, run: RunRecord): Promise<void> {
  await to.createRun(run);
  await to.setRunStatus(run.runId, run.status, run.error);
  const tasks = await from.listTasks(run.runId);
  await to.putTasks(run.runId, tasks);
  for (const c of (await from.getCompletions(tasks.map((t) => t.taskId))).values()) await to.putCompletion(c);
  for (const v of await from.listVerdicts(run.runId)) await to.putVerdict(run.runId, v);
  // Spend as the cloud settled it; the local copy starts at zero.
  const copy = await to.getRun(run.runId);
  if (copy && copy.spentUsd === 0 && run.spentUsd > 0) await to.settleBudget(run.runId, 0, run.spentUsd);
}
