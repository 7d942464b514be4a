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
import { defaultPython, openRunDir, parsePositiveInt, pythonFlag, UsageError, writeRunId } from './common';
import { loadSweep, modelBudgetsOf, planSweep, sweepRunDir, sweepRunFlags, type LoadedSweep } from './sweep-commands';
import { emulateCloudRun } from '../../emulator/emulated-run';
import { emulatorWorkflow } from '../../emulator/assembly-cache';
import { defaultCloudDeps } from '../../app/deployed-stack';
import { cloudRun } from './cloud/run';
import { resolveRun, type ResolvedRun } from './resolve-run';
import { estimateRun } from '../../core/report/subset-estimate';
import { screenModels } from '../../core/sweep/screening';

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
  /** --cloud: start without `rcb cloud doctor`'s check of the account. */
  skipDoctor?: boolean;
  /** Cancel the sweep's pending batches and keep what they answered. */
  cancelBatches?: boolean;
}

export async function sweepRunCommand(file: string, opts: SweepRunOptions): Promise<number> {
  if (opts.emulate && opts.cloud) throw new UsageError('--emulate and --cloud exclude each other');
  // The warm executor without a sandbox is refused here: it is not safe to run on a shared machine.
  if (opts.unsafeNoSandbox && (opts.emulate || opts.executor === 'warm'))
    throw new UsageError('--unsafe-no-sandbox is refused for sweeps with the warm executor or --emulate; use --executor cold');
  pythonFlag(opts.python);
  const loaded = loadSweep(file);
  process.stderr.write(planSweep(loaded).text);
  if ((opts.emulate || opts.cloud) && loaded.sweep.screening)
    throw new UsageError(
      `${loaded.sweep.file}:${loaded.sweep.screening.line}: screening runs on this machine only (rcb sweep run without --emulate or --cloud); in the cloud, run the stages as two sweeps`,
    );
  if (opts.emulate || opts.cloud) return cloudSweep(loaded, opts);
  if (loaded.screen) return screeningSweep(loaded, loaded.screen, opts);
  return localStage(loaded, loaded.run, opts, modelBudgetsOf(loaded.sweep));
}

/** One run of the sweep on this machine: all of it, or one stage of a screening sweep. */
async function localStage(loaded: LoadedSweep, run: ResolvedRun, opts: SweepRunOptions, modelBudgets: Record<string, number>): Promise<number> {
  const batchModels = new Set(loaded.sweep.models.filter((m) => m.mode === 'batch' && run.models.clients.has(m.name)).map((m) => m.name));
  const settings = loaded.sweep.batch;
  const flags = {
    jobs: opts.jobs,
    python: opts.python,
    out: sweepRunDir(loaded.sweep, run),
    unsafeNoSandbox: opts.unsafeNoSandbox,
    concurrency: opts.concurrency,
    executor: opts.executor,
  };
  const local = localRunOptions(flags, run, {
    modelBudgets,
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
  return printLocalRun(await runLocally(run, local, loaded.hosted));
}

/**
 * A screening sweep on this machine: stage 1 runs every model on the subset; the models its
 * estimates keep then run on the full set, with what is left of the sweep's budget (and of
 * each model's). Answers of paid models are reused by task id through the machine's
 * completion cache, so stage 2 buys only the tasks outside the subset. Rerunning resumes
 * both: stage 1 is found finished, and the same models are kept.
 */
async function screeningSweep(loaded: LoadedSweep, screen: ResolvedRun, opts: SweepRunOptions): Promise<number> {
  const { sweep } = loaded;
  const screening = sweep.screening!;
  process.stderr.write(
    `stage 1, screening: ${screen.spec.models.length} model(s) on the subset's ${screen.pset.papers.reduce((a, p) => a + p.snippets.length, 0)} task(s)\n`,
  );
  const code = await localStage(loaded, screen, opts, modelBudgetsOf(sweep));
  const { store } = openRunDir(sweepRunDir(sweep, screen), false);
  let decision: ReturnType<typeof screenModels>;
  let spent: { total: number; byModel: Map<string, number> };
  let status: RunRecord['status'];
  try {
    const run = (await store.getRun(screen.runId))!;
    status = run.status;
    const tasks = await store.listTasks(screen.runId);
    const verdicts = new Map((await store.listVerdicts(screen.runId)).map((v) => [v.taskId, v]));
    const answers = await store.getCompletions(tasks.map((t) => t.taskId));
    const byModel = new Map<string, number>();
    for (const t of tasks) byModel.set(t.model, (byModel.get(t.model) ?? 0) + (answers.get(t.taskId)?.costUsd ?? 0));
    spent = { total: run.spentUsd, byModel };
    const subset = run.spec.subset!;
    const estimates = estimateRun(run, tasks, verdicts, { file: subset.file, source: subset.source, sha256: subset.sha256 });
    decision = screenModels(
      screening,
      sweep.models.map((m) => m.name),
      estimates.models,
    );
    process.stdout.write(`\nscreening (${estimates.label}):\n${decision.lines.map((l) => `  ${l}`).join('\n')}\n`);
  } finally {
    await store.close();
  }
  if (status !== 'succeeded') {
    process.stderr.write(`stage 1 ended ${status}: stage 2 does not start; rerun the same command to resume\n`);
    return code || 1;
  }
  if (!decision.kept.length) {
    process.stdout.write('stage 2: no model kept; the sweep ends after screening\n');
    return 0;
  }
  const left = sweep.budgetUsd === null ? undefined : Math.max(0, sweep.budgetUsd - spent.total);
  const flags = { ...sweepRunFlags(sweep), model: decision.kept, budget: left === undefined ? undefined : String(left) };
  let full: ResolvedRun;
  try {
    full = resolveRun(flags, loaded.hosted);
  } catch (e) {
    throw new UsageError(`stage 2: ${(e as Error).message}`);
  }
  const budgets = Object.fromEntries(
    Object.entries(modelBudgetsOf(sweep))
      .filter(([m]) => decision.kept.includes(m))
      .map(([m, b]) => [m, Math.max(0, b - (spent.byModel.get(m) ?? 0))]),
  );
  process.stderr.write(
    `stage 2: ${decision.kept.length} model(s) on the full set (${decision.dropped.length} dropped)${left === undefined ? '' : `, $${left.toFixed(4)} of the budget left`}\n`,
  );
  return localStage(loaded, full, opts, budgets);
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
    // The doctor checks the sweep's own shape (its file), as `rcb cloud doctor --sweep` does.
    sweepFile: sweep.file,
    skipDoctor: opts.skipDoctor,
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
      // The stack synthesized with its bundles, kept by the sources' digest (emulator/assembly-cache.ts).
      workflow: await emulatorWorkflow(loaded.sweep.modelsFile ?? undefined),
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
