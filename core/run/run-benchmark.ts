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
import { generate } from './generate';
import { evaluate } from './evaluate';
import type { Progress } from './progress';
import { silentProgress } from './progress';

export interface RunBenchmarkDeps {
  store: RunStore;
  clients: Map<string, ModelClient>;
  executor: TestExecutor;
  costs?: Map<string, CostModel>;
  cache?: CompletionCache;
  progress?: Progress;
  now?: () => Date;
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
  signal?: AbortSignal;
}

export interface RunBenchmarkResult {
  run: RunRecord;
  tasks: TaskRecord[];
  generation: GenerateResult;
  /** Tests run by this invocation. */
  evaluated: number;
}

export async function runBenchmark(deps: RunBenchmarkDeps, input: RunBenchmarkInput): Promise<RunBenchmarkResult> {
  const now = deps.now ?? (() => new Date());
  const progress = deps.progress ?? silentProgress;
  const { store } = deps;
  const { runId } = input;
  await openRun(store, { runId, spec: input.spec, pset: input.pset, models: input.models }, now);
  if (input.clearStaleReservations) await store.clearReservations(runId);

  const tasks = planTasks(input.pset, input.spec);
  await store.putTasks(runId, tasks);
  await store.setRunStatus(runId, 'generating');

  const judged = new Set((await store.listVerdicts(runId)).map((v) => v.taskId));
  progress.start('evaluate', tasks.length);
  progress.advance('evaluate', judged.size);
  // The executor may start its workers (and their imports) now, while the first answers
  // are still being generated.
  const papersToTest = new Set(tasks.filter((t) => !judged.has(t.taskId)).map((t) => t.paper));
  if (papersToTest.size) deps.executor.expectPapers?.(input.pset.papers.filter((p) => papersToTest.has(p.meta.id)).map((p) => p.dir));

  let evaluated = 0;
  // Every answer goes to the executor as soon as it exists, in a call of its own: calls
  // overlap (the executor's slots take the next candidate as soon as they are free), so
  // no answer waits for a batch before it to finish.
  const evaluations = new Set<Promise<void>>();
  let evaluationFailure: { error: unknown } | undefined;
  const evaluateNow = (item: { task: TaskRecord; completion: CompletionRecord }) => {
    if (evaluationFailure) return;
    const running = evaluate({ store, executor: deps.executor, progress }, { runId, pset: input.pset, items: [item], judged }).then(
      (verdicts) => {
        evaluated += verdicts.filter((v) => v.executor !== 'none').length;
      },
      (error: unknown) => {
        evaluationFailure ??= { error };
      },
    );
    evaluations.add(running);
    void running.finally(() => evaluations.delete(running));
  };
  const evaluationsDone = async () => {
    while (evaluations.size) await Promise.all([...evaluations]);
    if (evaluationFailure) throw evaluationFailure.error;
  };

  let generation: GenerateResult;
  try {
    generation = await generate(
      { store, clients: deps.clients, costs: deps.costs, cache: deps.cache, progress, now },
      {
        runId,
        pset: input.pset,
        template: input.template,
        withPaper: input.spec.withPaper,
        tasks,
        concurrency: input.generationConcurrency,
        signal: input.signal,
        onCompletion: (task, completion) => {
          if (judged.has(task.taskId)) return;
          evaluateNow({ task, completion });
        },
      },
    );
    await store.setRunStatus(runId, 'evaluating');
  } finally {
    await evaluationsDone().catch(() => undefined);
  }
  await evaluationsDone();
  progress.end('evaluate');

  const complete = judged.size === tasks.length;
  const status: RunStatus = complete ? 'succeeded' : generation.budgetExhausted ? 'budget_exhausted' : input.signal?.aborted ? 'cancelled' : 'failed';
  await store.setRunStatus(runId, status, status === 'failed' ? `${tasks.length - judged.size} task(s) have no verdict` : undefined);
  return { run: (await store.getRun(runId))!, tasks, generation, evaluated };
}
