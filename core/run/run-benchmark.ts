/**
 * The whole run in one process (the local flow): plan, then generation and evaluation as a
 * pipeline (answers are tested while other answers are still being generated), then the
 * run's final status. Every step skips what the store already holds, so running the same
 * spec again resumes a killed run without repeating a model call or a test.
 */
import type { Pset } from '../types';
import type { TestExecutor } from '../executor';
import type { ModelClient } from '../model';
import type { CompletionCache, CompletionRecord, ModelInfo, RunRecord, RunSpec, RunStatus, RunStore, TaskRecord } from '../store';
import type { PromptTemplate } from '../prompt/template';
import { openRun, planTasks } from './plan';
import type { CostModel, GenerateResult } from './generate';
import { generate, MAX_ANSWER_ATTEMPTS, reopenFailedAnswers } from './generate';
import { generateBatches, type BatchGenerateDeps, type BatchGenerateResult } from './generate-batch';
import { evaluate } from './evaluate';
import type { Progress } from './progress';
import { silentProgress } from './progress';
import { budgetAccountId, openBudgetAccounts } from './budget';

export interface RunBenchmarkDeps {
  store: RunStore;
  clients: Map<string, ModelClient>;
  executor: TestExecutor;
  costs?: Map<string, CostModel>;
  cache?: CompletionCache;
  progress?: Progress;
  now?: () => Date;
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
  /** Candidates handed to the executor at a time (a few per executor worker keeps it busy). */
  evaluationBatch: number;
  /**
   * Drop budget reservations left by a crashed earlier process. Only for a runner that owns
   * the run alone (local); never in the cloud, where other workers may be in flight.
   */
  clearStaleReservations: boolean;
  /**
   * Answers a task may get in all when the earlier ones were errors; a resumed run asks
   * again for those below it. 1 keeps every error answer. @default MAX_ANSWER_ATTEMPTS
   */
  maxAnswerAttempts?: number;
  /** Budgets of single models (a sweep's), USD, within the run's total (spec.budgetUsd). */
  modelBudgets?: Record<string, number>;
  /** Models whose tasks go through batch APIs; the others are asked interactively. */
  batch?: RunBatchSettings;
  signal?: AbortSignal;
}

export interface RunBenchmarkResult {
  run: RunRecord;
  tasks: TaskRecord[];
  /** Interactive and batch generation together (batch answers count as calls). */
  generation: GenerateResult;
  /** What the batch lane did, when the run has batch-mode models. */
  batch?: BatchGenerateResult;
  /** Tests run by this invocation. */
  evaluated: number;
}

export async function runBenchmark(deps: RunBenchmarkDeps, input: RunBenchmarkInput): Promise<RunBenchmarkResult> {
  const now = deps.now ?? (() => new Date());
  const progress = deps.progress ?? silentProgress;
  const { store } = deps;
  const { runId } = input;
  await openRun(store, { runId, spec: input.spec, pset: input.pset, models: input.models }, now);
  const cappedModels = await openBudgetAccounts(store, runId, input.spec, input.modelBudgets ?? {}, now);
  if (input.clearStaleReservations) {
    await store.clearReservations(runId);
    for (const model of cappedModels) await store.clearReservations(budgetAccountId(runId, model));
  }

  const tasks = planTasks(input.pset, input.spec);
  await store.putTasks(runId, tasks);
  await store.setRunStatus(runId, 'generating');
  // Before the verdicts are listed: reopening a task drops its generation_error verdict.
  const priorAttempts = await reopenFailedAnswers(store, runId, tasks, input.maxAnswerAttempts ?? MAX_ANSWER_ATTEMPTS);

  const judged = new Set((await store.listVerdicts(runId)).map((v) => v.taskId));
  progress.start('evaluate', tasks.length);
  progress.advance('evaluate', judged.size);
  const ready: { task: TaskRecord; completion: CompletionRecord }[] = [];
  let generationDone = false;
  let wake: (() => void) | null = null;
  const notify = () => {
    wake?.();
    wake = null;
  };
  let evaluated = 0;

  const evaluation = (async () => {
    for (;;) {
      if (!ready.length) {
        if (generationDone) return;
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      const batch = ready.splice(0, input.evaluationBatch);
      const verdicts = await evaluate(
        { store, executor: deps.executor, progress },
        { runId, pset: input.pset, items: batch, judged },
      );
      evaluated += verdicts.filter((v) => v.executor !== 'none').length;
    }
  })();

  let generation: GenerateResult;
  let batch: BatchGenerateResult | undefined;
  const onCompletion = (task: TaskRecord, completion: CompletionRecord) => {
    if (judged.has(task.taskId)) return;
    ready.push({ task, completion });
    notify();
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
    generationDone = true;
    notify();
    await evaluation.catch(() => undefined);
  }
  await evaluation;
  progress.end('evaluate');

  const complete = judged.size === tasks.length;
  const cancelled = input.signal?.aborted || !!input.batch?.cancel;
  const status: RunStatus = complete ? 'succeeded' : generation.budgetExhausted ? 'budget_exhausted' : cancelled ? 'cancelled' : 'failed';
  await store.setRunStatus(runId, status, status === 'failed' ? `${tasks.length - judged.size} task(s) have no verdict` : undefined);
  return { run: (await store.getRun(runId))!, tasks, generation, ...(batch ? { batch } : {}), evaluated };
}
