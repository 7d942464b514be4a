/** `rcb run`: the whole benchmark on this machine. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { runFolderName } from '../../core/ids';
import { runBenchmark, type RunBenchmarkDeps } from '../../core/run/run-benchmark';
import { buildReport } from '../../core/report/build-report';
import { TerminalProgress } from '../../adapters/local/terminal-progress';
import { SqliteCompletionCache } from '../../adapters/local/sqlite-store';
import { createLocalExecutor, defaultJobs } from '../../adapters/executor';
import { cacheDir, defaultPython, interpreterPath, openRunDir, parseNumber, parsePositiveInt, runIdIn, sandboxFromFlags, UsageError, writeRunId, type SandboxFlags } from './common';
import { FileEnvironmentCache } from '../../adapters/local/environment-cache';
import { SqliteBatchLedger } from '../../adapters/local/sqlite-batch-ledger';
import type { BatchClient } from '../../core/batch';
import type { CostModel } from '../../core/run/generate';
import { batchModelIds, resolveRun, type ResolvedRun, type RunSpecFlags } from './resolve-run';
import type { HostedModels } from '../../adapters/models/hosted-models';
import { estimateRun, formatEstimates } from './model-commands';
import { formatErrorSummary, summarizeErrors } from '../../core/run/error-summary';
import { MAX_ANSWER_ATTEMPTS } from '../../core/run/generate';

export interface RunOptions extends RunSpecFlags, SandboxFlags {
  jobs?: string;
  python?: string;
  out?: string;
  concurrency: string;
  modelsFile?: string;
  executor: string;
  skipEnvCheck?: boolean;
  /** Every hosted model through its provider's batch API. */
  batch?: boolean;
  batchPoll?: string;
  cancelBatches?: boolean;
}

/** Paid answers are shared by every run on this machine: the same task is never bought twice. */
function openCompletionCache(): SqliteCompletionCache {
  const dir = cacheDir();
  mkdirSync(dir, { recursive: true });
  return new SqliteCompletionCache(join(dir, 'completions.sqlite'));
}

export async function runCommand(opts: RunOptions, hosted: HostedModels): Promise<number> {
  const resolved = resolveRun(opts, hosted);
  if (opts.cancelBatches && !opts.batch) throw new UsageError('--cancel-batches goes with --batch (the same flags as the run whose batches to cancel)');
  let batch: LocalRunExtras['batch'];
  if (opts.batch) {
    batch = { models: new Set(batchModelIds(resolved, hosted)), pollSeconds: parseNumber('--batch-poll', opts.batchPoll ?? '60', 0), cancel: !!opts.cancelBatches };
  }
  return runLocally(resolved, opts, hosted, { batch });
}

/** What a sweep adds to a local run. */
export interface LocalRunExtras {
  /** Budgets of single models, USD, within the run's total. */
  modelBudgets?: Record<string, number>;
  /** Estimates are printed by the caller (a sweep plan prints its own). */
  quietEstimate?: boolean;
  /** Models that go through their provider's batch API, and how. */
  batch?: { models: Set<string>; pollSeconds: number; maxRounds?: number; retryInteractively?: boolean; cancel?: boolean };
}

/** Run a resolved run spec on this machine: the body of `rcb run`, shared with `rcb sweep run`. */
export async function runLocally(
  resolved: ResolvedRun,
  opts: Omit<RunOptions, keyof RunSpecFlags>,
  hosted: HostedModels,
  extras: LocalRunExtras,
): Promise<number> {
  const { pset, template, models, spec, runId, samples, temperature, budgetUsd } = resolved;
  const withPaper = spec.withPaper;
  const jobs = opts.jobs ? parsePositiveInt('--jobs', opts.jobs) : defaultJobs();
  if (opts.executor !== 'warm' && opts.executor !== 'cold') throw new UsageError(`--executor must be warm or cold (got "${opts.executor}")`);
  const sandbox = sandboxFromFlags(opts);
  const paid = models.costs.size > 0;
  const generationConcurrency = paid ? parsePositiveInt('--concurrency', opts.concurrency) : Math.max(jobs * 4, 8);
  const outDir = resolve(opts.out ?? join('runs', runFolderName(spec, runId)));
  // Every check that can refuse the run comes before the run directory is created: a
  // refused run leaves nothing behind (test/reliability/bad-inputs.test.ts).
  const existingId = runIdIn(outDir);
  if (existingId && existingId !== runId) throw new UsageError(`${outDir} holds another run (${existingId}); choose another --out or remove it`);
  if (paid) {
    const missing = await hosted.checkKeys([...models.costs.keys()]);
    if (missing.length) throw new UsageError(`missing API keys: ${missing.join('; ')}`);
    // The summary before every paid run: what it will cost, before the first call.
    const ids = [...models.costs.keys()];
    if (!extras.quietEstimate) process.stderr.write(formatEstimates(estimateRun(hosted, ids, pset, template, withPaper, samples, temperature), budgetUsd));
    if (budgetUsd === null) process.stderr.write('warning: no --budget given for a run with paid models; spend is recorded but not capped\n');
  }

  const python = opts.python ?? defaultPython();
  const executor = await createLocalExecutor({
    warm: opts.executor === 'warm',
    python,
    jobs,
    timeoutSec: spec.timeoutSec,
    sandbox,
  }).catch((e: Error) => {
    throw new UsageError(e.message);
  });
  let opened: ReturnType<typeof openRunDir>;
  try {
    opened = openRunDir(outDir, true);
  } catch (e) {
    await executor.close();
    throw e;
  }
  const { store, dir } = opened;
  writeRunId(dir, runId);
  const cache = paid ? openCompletionCache() : undefined;
  // Slow models (`slow: true`) not sent to a batch API go through the batch lane too, in
  // their provider's background mode: no call waits on one long request.
  const slow = [...models.costs.keys()].filter((id) => hosted.entry(id)?.slow && !extras.batch?.models.has(id));
  const batchSettings: LocalRunExtras['batch'] = slow.length
    ? { pollSeconds: 5, ...extras.batch, models: new Set([...(extras.batch?.models ?? []), ...slow]) }
    : extras.batch;
  const ledger = batchSettings ? new SqliteBatchLedger(join(dir, 'rcb.sqlite')) : undefined;
  let batchDeps: RunBenchmarkDeps['batch'];
  if (batchSettings && ledger) {
    const batchClients = new Map<string, BatchClient>();
    const batchCosts = new Map<string, CostModel>();
    for (const id of batchSettings.models) {
      const b = slow.includes(id) ? hosted.resolveBackground(id, { temperature })! : hosted.resolveBatch(id, { temperature })!;
      batchClients.set(id, b.client);
      batchCosts.set(id, b.cost);
    }
    batchDeps = {
      ledger,
      batchClients,
      batchCosts,
      onEvent: (e) => {
        if (e.type === 'submitted') progress.note(`batch ${e.providerBatchId} of ${e.model} submitted: ${e.requests} request(s), $${e.reservedUsd.toFixed(4)} held at its worst case`);
        else if (e.type === 'ingested') progress.note(`batch ${e.providerBatchId} of ${e.model} ended: ${e.succeeded} answered, ${e.failed} failed, ${e.reopened} open again; $${e.spentUsd.toFixed(4)} spent`);
        else if (e.type === 'cancel_requested') progress.note(`batch ${e.providerBatchId} of ${e.model}: cancel requested`);
      },
    };
  }
  const progress = new TerminalProgress();
  const abort = new AbortController();
  // First Ctrl-C: no new model call and no new test; the tests in flight finish and keep
  // their verdicts. Second: stop those too (the executor kills their process groups). A
  // third, should closing hang: leave at once; the store is crash-safe.
  let interrupts = 0;
  const onSignal = () => {
    interrupts++;
    if (interrupts === 1) {
      progress.note('interrupted: finishing the tests in flight, then stopping (Ctrl-C again to stop them now); run the same command again to resume');
      abort.abort();
    } else if (interrupts === 2) {
      progress.note('stopping now: the tests in flight are killed and will run again when the run is resumed');
      progress.silence();
      void executor.close();
    } else process.exit(130);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const started = Date.now();
  progress.note(`run ${runId} in ${dir}: ${pset.papers.length} paper(s), ${spec.models.length} model(s), ${samples} sample(s), ${jobs} job(s)`);
  try {
    const result = await runBenchmark(
      { store, clients: models.clients, executor, costs: models.costs, cache, progress, batch: batchDeps, environmentCache: new FileEnvironmentCache(join(cacheDir(), 'environment.json')) },
      {
        runId,
        spec,
        pset,
        template,
        models: models.info,
        generationConcurrency,
        clearStaleReservations: true,
        evaluationsInFlight: jobs * 2,
        environmentCheck: opts.skipEnvCheck ? null : { interpreter: interpreterPath(python) },
        modelBudgets: extras.modelBudgets,
        batch: batchSettings && {
          models: batchSettings.models,
          pollMs: batchSettings.pollSeconds * 1000,
          maxRounds: batchSettings.maxRounds,
          retryInteractively: batchSettings.retryInteractively,
          cancel: batchSettings.cancel,
        },
        signal: abort.signal,
      },
    );
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    if (result.run.status === 'cancelled') {
      // A partial leaderboard would score every untested task as failed: say where the run stands instead.
      const judged = (await store.listVerdicts(runId)).length;
      process.stderr.write(
        `run cancelled after ${seconds}s: ${judged} of ${result.tasks.length} task(s) judged, ${result.evaluated} test(s) run by this invocation\n` +
          `run the same command again to resume; the run directory is ${dir}\n`,
      );
      return 130;
    }
    const { text } = await buildReport(store, runId, { format: 'table', judge: 'strict', subset: 'all' });
    const official = await buildReport(store, runId, { format: 'official', judge: 'official', subset: 'all' });
    writeFileSync(join(dir, 'leaderboard.txt'), text);
    writeFileSync(join(dir, 'overall_stats.json'), official.text);
    process.stdout.write('\n' + text);
    const answers = await store.getCompletions(result.tasks.map((t) => t.taskId));
    process.stderr.write(formatErrorSummary(summarizeErrors(answers.values(), MAX_ANSWER_ATTEMPTS)));
    const g = result.generation;
    process.stdout.write(
      `\nrun ${result.run.status} in ${seconds}s: ${g.called} model call(s), ${g.reused} answer(s) reused, ${result.evaluated} test(s) run` +
        (paid ? `, spend $${result.run.spentUsd.toFixed(4)}` : '') +
        `\nrun directory: ${dir}\n`,
    );
    if (result.batch && result.batch.open && !result.batch.cancelled && result.run.status !== 'budget_exhausted') {
      process.stderr.write(`${result.batch.open} task(s) wait on pending batches: run the same command again to collect them (or add --cancel-batches to cancel them)\n`);
    }
    if (result.generation.exhaustedModels?.length) {
      process.stderr.write(`models whose own budget is spent: ${result.generation.exhaustedModels.join(', ')}\n`);
    }
    if (result.run.status === 'budget_exhausted') {
      process.stderr.write('budget exhausted: run the same command with a higher --budget to finish the run\n');
      return 3;
    }
    return result.run.status === 'succeeded' ? 0 : 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await executor.close();
    await store.close();
    cache?.close();
    ledger?.close();
  }
}
