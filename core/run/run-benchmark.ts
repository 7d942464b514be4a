/**
 * The whole run in one process (the local flow): plan, then generation and evaluation as a
 * pipeline (answers are tested while other answers are still being generated), then the
 * run's final status. Every step skips what the store already holds, so running the same
 * spec again resumes a killed run without repeating a model call or a test.
 */
import type { Pset } from '../types';
import type { TestExecutor } from '../executor';
import type { ModelClient } from '../model';
import type { CompletionCache, RunStore } from '../store';
import type { CompletionRecord, ModelInfo, RunRecord, RunSpec, RunStatus, TaskRecord } from '../records';
import type { PromptTemplate } from '../prompt/template';
import { openRun, planTasks } from './plan';
import type { CostModel, GenerateResult } from './generate';
import { generate, MAX_ANSWER_ATTEMPTS, reopenFailedAnswers } from './generate';
import { generateBatches, type BatchGenerateDeps, type BatchGenerateResult } from './generate-batch';
import { evaluate } from './evaluate';
import type { Progress } from './progress';
import { silentProgress } from './progress';
import type { EnvironmentCache } from './env-check';
import { checkEnvironment } from './env-check';
import { budgetAccountId, openBudgetAccounts } from './budget';

export interface RunBenchmarkDeps {
  store: RunStore;
  clients: Map<string, ModelClient>;
  executor: TestExecutor;
  costs?: Map<string, CostModel>;
  cache?: CompletionCache;
  progress?: Progress;
  now?: () => Date;
  /** Papers already checked for this interpreter (`rcb doctor`'s results). */
  environmentCache?: EnvironmentCache;
  /** Batch clients, pricing and ledger of the batch-mode models (input.batch). */
  batch?: Pick<BatchGenerateDeps, 'ledger' | 'batchClients' | 'batchCosts' | 'sleep' | 'onEvent'>;
}

/** Which models go through their provider's batch API, and how. */
export interface RunBatchSettings {
  models: ReadonlySet<string>;
  pollMs: number;
  maxRounds?: number;
  retryInteractively?: boolean;
  /** Cancel the pending batches and collect what they answered; submit nothing. */
  cancel?: boolean;
}

export interface RunBenchmarkInput {
  runId: string;
  spec: RunSpec;
  pset: Pset;
  template: PromptTemplate;
  models: Record<string, ModelInfo>;
  /** Model calls in flight at once. */
  generationConcurrency: number;
  /**
   * Drop budget reservations left by a crashed earlier process. Only for a runner that owns
   * the run alone (local); never in the cloud, where other workers may be in flight.
   */
  clearStaleReservations: boolean;
  /**
   * Check first, per paper, that its oracle passes in this environment (from the cache, or
   * by running it), and leave the tasks of papers that cannot run untested (env_broken).
   * Absent or null skips the check (`--skip-env-check`): every paper is taken to run.
   */
  environmentCheck?: { interpreter: string } | null;
  /** Snippets whose reference is flaky (`rcb doctor --repeat`): their verdicts are flagged flaky_reference. */
  flakySnippets?: ReadonlySet<string>;
  /**
   * Answers a task may get in all when the earlier ones were errors; a resumed run asks
   * again for those below it. 1 keeps every error answer. @default MAX_ANSWER_ATTEMPTS
   */
  maxAnswerAttempts?: number;
  /** Budgets of single models (a sweep's), USD, within the run's total (spec.budgetUsd). */
  modelBudgets?: Record<string, number>;
  /** Models whose tasks go through batch APIs; the others are asked interactively. */
  batch?: RunBatchSettings;
  /**
   * Tests handed to the executor at once (a few more than its slots keeps them busy); the
   * other answers wait in the run, so an interrupted run starts no more of them.
   * @default no limit
   */
  evaluationsInFlight?: number;
  signal?: AbortSignal;
}

export interface RunBenchmarkResult {
  run: RunRecord;
  tasks: TaskRecord[];
  /** Interactive and batch generation together (batch answers count as calls). */
  generation: GenerateResult;
  /** What the batch lane did, when the run has batch-mode models. */
  batch?: BatchGenerateResult;
  /** Tests run by this invocation (the environment check's not counted). */
  evaluated: number;
  /** Tasks left untested because their paper cannot run here. */
  envBroken: TaskRecord[];
}

export async function runBenchmark(deps: RunBenchmarkDeps, input: RunBenchmarkInput): Promise<RunBenchmarkResult> {
  const now = deps.now ?? (() => new Date());
  const progress = deps.progress ?? silentProgress;
  const { store } = deps;
  const { runId } = input;
  const opened = await openRun(store, { runId, spec: input.spec, pset: input.pset, models: input.models }, now);
  const cappedModels = await openBudgetAccounts(store, runId, input.spec, input.modelBudgets ?? {}, now);
  if (input.clearStaleReservations) {
    await store.clearReservations(runId);
    for (const model of cappedModels) await store.clearReservations(budgetAccountId(runId, model));
  }

  const allTasks = planTasks(input.pset, input.spec);
  await store.putTasks(runId, allTasks);

  // Papers whose oracle fails here would score 0% for every model: their tasks are neither
  // generated nor tested, and reports name them instead of counting them as model failures.
  let broken = new Set<string>();
  if (input.environmentCheck) {
    progress.note("checking that each paper's oracle passes in this environment (rcb doctor; --skip-env-check to skip)");
    const papers = await checkEnvironment(
      { executor: deps.executor, cache: deps.environmentCache },
      { pset: input.pset, interpreter: input.environmentCheck.interpreter },
    );
    await store.setRunEnvironment(runId, { python: input.environmentCheck.interpreter, papers, checkedAt: now().toISOString() });
    broken = new Set(papers.filter((p) => !p.runs).map((p) => p.paper));
    for (const p of papers.filter((x) => !x.runs)) {
      const n = allTasks.filter((t) => t.paper === p.paper).length;
      progress.note(`env_broken: ${p.paper} cannot run here (${p.reason}): its ${n} task(s) are left untested and out of the scores`);
    }
  } else if (opened.environment) {
    // Resumed without the check: every paper's tasks are now tested, so none is env_broken.
    await store.setRunEnvironment(runId, null);
  }
  const tasks = allTasks.filter((t) => !broken.has(t.paper));
  const envBroken = allTasks.filter((t) => broken.has(t.paper));
  await store.setRunStatus(runId, 'generating');
  // Before the verdicts are listed: reopening a task drops its generation_error verdict.
  const priorAttempts = await reopenFailedAnswers(store, runId, tasks, input.maxAnswerAttempts ?? MAX_ANSWER_ATTEMPTS);

  const runnable = new Set(tasks.map((t) => t.taskId));
  const judged = new Set((await store.listVerdicts(runId)).map((v) => v.taskId).filter((id) => runnable.has(id)));
  progress.start('evaluate', tasks.length);
  progress.advance('evaluate', judged.size);
  // The executor may start its workers (and their imports) now, while the first answers
  // are still being generated.
  const papersToTest = new Set(tasks.filter((t) => !judged.has(t.taskId)).map((t) => t.paper));
  if (papersToTest.size) deps.executor.expectPapers?.(input.pset.papers.filter((p) => papersToTest.has(p.meta.id)).map((p) => p.dir));

  let evaluated = 0;
  // Every answer goes to the executor as soon as it exists and a place is free, in a call
  // of its own: calls overlap (the executor's slots take the next candidate as soon as they
  // are free), so no answer waits for a batch before it to finish. Beyond
  // evaluationsInFlight the answers wait here, where an interrupt can still hold them back.
  type Item = { task: TaskRecord; completion: CompletionRecord };
  const evaluations = new Set<Promise<void>>();
  const waiting: Item[] = [];
  const inFlightLimit = input.evaluationsInFlight ?? Infinity;
  let evaluationFailure: { error: unknown } | undefined;
  const evaluateNow = (item: Item) => {
    // Interrupted: the tests in flight finish (their verdicts are real), no other starts;
    // the rest is left for the resumed run.
    if (evaluationFailure || input.signal?.aborted) return;
    if (evaluations.size >= inFlightLimit) {
      waiting.push(item);
      return;
    }
    const running = evaluate({ store, executor: deps.executor, progress }, { runId, pset: input.pset, items: [item], judged, flaky: input.flakySnippets }).then(
      (verdicts) => {
        evaluated += verdicts.filter((v) => v.executor !== 'none').length;
      },
      (error: unknown) => {
        evaluationFailure ??= { error };
      },
    );
    evaluations.add(running);
    void running.finally(() => {
      evaluations.delete(running);
      const next = waiting.shift();
      if (next) evaluateNow(next);
    });
  };
  const evaluationsDone = async () => {
    while (evaluations.size) await Promise.all([...evaluations]);
    if (evaluationFailure) throw evaluationFailure.error;
  };

  let generation: GenerateResult;
  let batch: BatchGenerateResult | undefined;
  const onCompletion = (task: TaskRecord, completion: CompletionRecord) => {
    if (!judged.has(task.taskId)) evaluateNow({ task, completion });
  };
  const batchModels = input.batch?.models ?? new Set<string>();
  if (batchModels.size && !deps.batch) throw new Error('batch-mode models need batch clients (deps.batch)');
  try {
    const interactive = generate(
      { store, clients: deps.clients, costs: deps.costs, cache: deps.cache, progress, now, cappedModels },
      {
        runId,
        pset: input.pset,
        template: input.template,
        withPaper: input.spec.withPaper,
        tasks: tasks.filter((t) => !batchModels.has(t.model)),
        concurrency: input.generationConcurrency,
        priorAttempts,
        signal: input.signal,
        onCompletion,
      },
    );
    const batched = batchModels.size
      ? generateBatches(
          { ...deps.batch!, store, interactive: { clients: deps.clients, costs: deps.costs }, cache: deps.cache, cappedModels, progress, now },
          {
            runId,
            pset: input.pset,
            template: input.template,
            withPaper: input.spec.withPaper,
            tasks: tasks.filter((t) => batchModels.has(t.model)),
            pollMs: input.batch!.pollMs,
            maxRounds: input.batch!.maxRounds,
            retryInteractively: input.batch!.retryInteractively,
            cancel: input.batch!.cancel,
            reservationsCleared: input.clearStaleReservations,
            onCompletion,
            signal: input.signal,
          },
        )
      : undefined;
    [generation, batch] = await Promise.all([interactive, batched]);
    if (batch) {
      generation = {
        called: generation.called + batch.answered + batch.failed,
        reused: generation.reused + batch.reused,
        failed: generation.failed + batch.failed,
        budgetExhausted: generation.budgetExhausted || batch.budgetExhausted,
        exhaustedModels: [...new Set([...(generation.exhaustedModels ?? []), ...batch.exhaustedModels])],
      };
    }
    await store.setRunStatus(runId, 'evaluating');
  } finally {
    await evaluationsDone().catch(() => undefined);
  }
  await evaluationsDone();
  progress.end('evaluate');

  const complete = tasks.every((t) => judged.has(t.taskId));
  const cancelled = input.signal?.aborted || !!input.batch?.cancel;
  const status: RunStatus = complete ? 'succeeded' : generation.budgetExhausted ? 'budget_exhausted' : cancelled ? 'cancelled' : 'failed';
  await store.setRunStatus(runId, status, status === 'failed' ? `${tasks.length - judged.size} task(s) have no verdict` : undefined);
  return { run: (await store.getRun(runId))!, tasks: allTasks, generation, ...(batch ? { batch } : {}), evaluated, envBroken };
}
