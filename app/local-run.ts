/**
 * A run on this machine (`rcb run`, `rcb sweep run`): the adapters of a local run assembled
 * from a resolved run and plain options, the benchmark run through them, the run's outputs
 * written to its directory. What it returns the command prints.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { runFolderName } from '../core/ids';
import { runBenchmark, type RunBatchSettings, type RunBenchmarkDeps, type RunBenchmarkResult } from '../core/run/run-benchmark';
import { asyncLanes } from '../core/run/lanes';
import { writeRunOutputs } from '../core/run/run-outputs';
import { formatErrorSummary, summarizeErrors } from '../core/run/error-summary';
import { MAX_ANSWER_ATTEMPTS, type CostModel } from '../core/run/generate';
import type { BatchClient } from '../core/batch';
import type { TestExecutor } from '../core/executor';
import { TerminalProgress } from '../adapters/local/terminal-progress';
import { SqliteCompletionCache, type SqliteRunStore } from '../adapters/local/sqlite-store';
import { SqliteBatchLedger } from '../adapters/local/sqlite-batch-ledger';
import { FileEnvironmentCache, FileFlakyCache } from '../adapters/local/environment-cache';
import { lockRunDir, RunLockedError } from '../adapters/local/run-lock';
import { knownFlaky } from '../core/run/reference-repeat';
import { createLocalExecutor, defaultJobs } from '../adapters/executor';
import type { SandboxMode } from '../adapters/executor/executor-options';
import type { HostedModels } from '../adapters/models/hosted-models';
import { recordRunOwner } from './run-owner';
import { cacheDir, defaultPython, interpreterPath, openRunDir, runIdIn, UsageError, writeRunId } from './local-machine';
import { laneClient } from './models';
import { estimateRun, formatEstimates } from './estimate';
import type { ResolvedRun } from './resolve-run';

/** Models that go through their provider's batch API, and how. */
export interface LocalBatchSettings {
  models: Set<string>;
  pollSeconds: number;
  maxRounds?: number;
  retryInteractively?: boolean;
  cancel?: boolean;
}

/** How to run on this machine, as plain values (the command reads them from its flags). */
export interface LocalRunOptions {
  /** Tests at once. @default one per core */
  jobs?: number;
  /** @default defaultPython() */
  python?: string;
  /** The run directory. @default runs/<models>-<run id> */
  outDir?: string;
  /** Model calls in flight at once, for hosted models. */
  concurrency: number;
  executor: 'warm' | 'cold';
  sandbox: SandboxMode;
  skipEnvCheck?: boolean;
  /** Budgets of single models, USD, within the run's total (a sweep's). */
  modelBudgets?: Record<string, number>;
  /** Estimates are printed by the caller (a sweep plan prints its own). */
  quietEstimate?: boolean;
  batch?: LocalBatchSettings;
}

/** What a local run ended with; `exitCode` is the command's. */
export type LocalRunOutcome =
  | { kind: 'cancelled'; dir: string; seconds: string; judged: number; envBroken: number; result: RunBenchmarkResult; exitCode: number }
  | { kind: 'finished'; dir: string; seconds: string; paid: boolean; leaderboard: string; errorSummary: string; result: RunBenchmarkResult; exitCode: number };

/** Run a resolved run on this machine: the body of `rcb run`, shared with `rcb sweep run`. */
export async function runLocally(resolved: ResolvedRun, options: LocalRunOptions, hosted: HostedModels): Promise<LocalRunOutcome> {
  const jobs = options.jobs ?? defaultJobs();
  const outDir = resolve(options.outDir ?? join('runs', runFolderName(resolved.spec, resolved.runId)));
  // Every check that can refuse the run comes before the run directory is created: a
  // refused run leaves nothing behind (test/reliability/bad-inputs.test.ts).
  await refuseBeforeStarting(resolved, options, hosted, outDir);
  const python = options.python ?? defaultPython();
  const executor = await createLocalExecutor({
    warm: options.executor === 'warm',
    python,
    jobs,
    timeoutSec: resolved.spec.timeoutSec,
    sandbox: options.sandbox,
  }).catch((e: Error) => {
    throw new UsageError(e.message);
  });
  let opened: ReturnType<typeof openRunDir>;
  let release: (() => void) | undefined;
  try {
    mkdirSync(outDir, { recursive: true });
    // Two runs on one --out would test the same tasks twice and race on the store: one at a time.
    release = lockRunDir(outDir);
    opened = openRunDir(outDir, true);
  } catch (e) {
    release?.();
    await executor.close();
    throw e instanceof RunLockedError ? new UsageError(e.message) : e;
  }
  const { store, dir } = opened;
  writeRunId(dir, resolved.runId);
  recordRunOwner(dir);
  const paid = resolved.models.costs.size > 0;
  const cache = paid ? openCompletionCache() : undefined;
  const progress = new TerminalProgress();
  const lanes = localAsyncLanes(resolved, options.batch, hosted, dir, progress);
  const interrupts = onInterrupts(progress, executor);
  const started = Date.now();
  // What `rcb doctor --repeat` found for these papers with this interpreter: flagged, not hidden.
  const flaky = knownFlaky(new FileFlakyCache(join(cacheDir(), 'flaky.json')), resolved.pset, interpreterPath(python));
  if (flaky.size)
    progress.note(
      `flaky_reference: ${flaky.size} snippet(s) of these papers have a reference whose verdict changes from run to run (rcb doctor --repeat): their verdicts are flagged and counted in the reports`,
    );
  progress.note(
    `run ${resolved.runId} in ${dir}: ${resolved.pset.papers.length} paper(s), ${resolved.spec.models.length} model(s), ${resolved.samples} sample(s), ${jobs} job(s)`,
  );
  try {
    const result = await runBenchmark(
      {
        store,
        clients: resolved.models.clients,
        executor,
        costs: resolved.models.costs,
        cache,
        progress,
        batch: lanes?.deps,
        environmentCache: new FileEnvironmentCache(join(cacheDir(), 'environment.json')),
      },
      {
        runId: resolved.runId,
        spec: resolved.spec,
        pset: resolved.pset,
        template: resolved.template,
        models: resolved.models.info,
        generationConcurrency: paid ? options.concurrency : Math.max(jobs * 4, 8),
        clearStaleReservations: true,
        evaluationsInFlight: jobs * 2,
        environmentCheck: options.skipEnvCheck ? null : { interpreter: interpreterPath(python) },
        flakySnippets: flaky,
        modelBudgets: options.modelBudgets,
        batch: lanes?.settings,
        signal: interrupts.signal,
      },
    );
    return await finish(store, resolved.runId, dir, result, paid, ((Date.now() - started) / 1000).toFixed(1));
  } finally {
    interrupts.dispose();
    await executor.close();
    await store.close();
    cache?.close();
    lanes?.ledger.close();
    release();
  }
}

/** The refusals of a run that has not started: another run's directory, missing keys; and the estimate of a paid run. */
async function refuseBeforeStarting(resolved: ResolvedRun, options: LocalRunOptions, hosted: HostedModels, outDir: string): Promise<void> {
  const existingId = runIdIn(outDir);
  if (existingId && existingId !== resolved.runId) throw new UsageError(`${outDir} holds another run (${existingId}); choose another --out or remove it`);
  const ids = [...resolved.models.costs.keys()];
  if (!ids.length) return;
  const missing = await hosted.checkKeys(ids);
  if (missing.length) throw new UsageError(`missing API keys: ${missing.join('; ')}`);
  // The summary before every paid run: what it will cost, before the first call.
  const { pset, template, spec, samples, temperature, budgetUsd } = resolved;
  if (!options.quietEstimate) process.stderr.write(formatEstimates(estimateRun(hosted, ids, pset, template, spec.withPaper, samples, temperature), budgetUsd));
  if (budgetUsd === null) process.stderr.write('warning: no --budget given for a run with paid models; spend is recorded but not capped\n');
}

/** Paid answers are shared by every run on this machine: the same task is never bought twice. */
function openCompletionCache(): SqliteCompletionCache {
  const dir = cacheDir();
  mkdirSync(dir, { recursive: true });
  return new SqliteCompletionCache(join(dir, 'completions.sqlite'));
}

/**
 * The lanes no call waits on, if the run has any: the batch API of the models sent there and
 * the background mode of the slow ones (core/run/lanes.ts), their clients, ledger and settings.
 */
function localAsyncLanes(
  resolved: ResolvedRun,
  requested: LocalBatchSettings | undefined,
  hosted: HostedModels,
  dir: string,
  progress: TerminalProgress,
): { deps: NonNullable<RunBenchmarkDeps['batch']>; settings: RunBatchSettings; ledger: SqliteBatchLedger } | undefined {
  const paid = [...resolved.models.costs.keys()];
  const lanes = asyncLanes(paid, requested?.models ?? new Set(), (id) => !!hosted.entry(id)?.slow);
  const settings: LocalBatchSettings | undefined = lanes.background.length
    ? { pollSeconds: 5, ...requested, models: new Set([...(requested?.models ?? []), ...lanes.background]) }
    : requested;
  if (!settings) return undefined;
  const batchClients = new Map<string, BatchClient>();
  const batchCosts = new Map<string, CostModel>();
  for (const id of settings.models) {
    const lane = laneClient(hosted, id, lanes.background.includes(id) ? 'background' : 'batch', resolved.temperature);
    if ('problem' in lane) throw new UsageError(`${id}: ${lane.problem}`);
    batchClients.set(id, lane.client);
    batchCosts.set(id, lane.cost);
  }
  const ledger = new SqliteBatchLedger(join(dir, 'rcb.sqlite'));
  return {
    ledger,
    deps: {
      ledger,
      batchClients,
      batchCosts,
      onEvent: (e) => {
        if (e.type === 'submitted')
          progress.note(`batch ${e.providerBatchId} of ${e.model} submitted: ${e.requests} request(s), $${e.reservedUsd.toFixed(4)} held at its worst case`);
        else if (e.type === 'ingested')
          progress.note(
            `batch ${e.providerBatchId} of ${e.model} ended: ${e.succeeded} answered, ${e.failed} failed, ${e.reopened} open again; $${e.spentUsd.toFixed(4)} spent`,
          );
        else if (e.type === 'cancel_requested') progress.note(`batch ${e.providerBatchId} of ${e.model}: cancel requested`);
      },
    },
    settings: {
      models: settings.models,
      pollMs: settings.pollSeconds * 1000,
      maxRounds: settings.maxRounds,
      retryInteractively: settings.retryInteractively,
      cancel: settings.cancel,
    },
  };
}

/**
 * Ctrl-C and SIGTERM. First: no new model call and no new test; the tests in flight finish and
 * keep their verdicts. Second: stop those too (the executor kills their process groups). A
 * third, should closing hang: leave at once; the store is crash-safe.
 */
function onInterrupts(progress: TerminalProgress, executor: TestExecutor): { signal: AbortSignal; dispose(): void } {
  const abort = new AbortController();
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
  return {
    signal: abort.signal,
    dispose: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/** The run's outputs written to its directory (a cancelled run writes none), and its exit code. */
async function finish(store: SqliteRunStore, runId: string, dir: string, result: RunBenchmarkResult, paid: boolean, seconds: string): Promise<LocalRunOutcome> {
  if (result.run.status === 'cancelled') {
    // A partial leaderboard would score every untested task as failed: say where the run stands instead.
    // Counted over the papers that run here: env_broken tasks are never tested.
    const broken = new Set(result.envBroken.map((t) => t.taskId));
    const judged = (await store.listVerdicts(runId)).filter((v) => !broken.has(v.taskId)).length;
    return { kind: 'cancelled', dir, seconds, judged, envBroken: broken.size, result, exitCode: 130 };
  }
  const texts = await writeRunOutputs(store, runId, (output, text) => writeFileSync(join(dir, output.file), text));
  const answers = await store.getCompletions(result.tasks.map((t) => t.taskId));
  const status = result.run.status;
  return {
    kind: 'finished',
    dir,
    seconds,
    paid,
    leaderboard: texts.get('leaderboard.txt')!,
    errorSummary: formatErrorSummary(summarizeErrors(answers.values(), MAX_ANSWER_ATTEMPTS)),
    result,
    exitCode: status === 'budget_exhausted' ? 3 : status === 'succeeded' ? 0 : 1,
  };
}
