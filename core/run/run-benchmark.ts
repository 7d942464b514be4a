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
import type { EnvironmentCache } from './env-check';
import { checkEnvironment } from './env-check';

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
   * Check first, per paper, that its oracle passes in this environment (from the cache, or
   * by running it), and leave the tasks of papers that cannot run untested (env_broken).
   * Absent or null skips the check (`--skip-env-check`): every paper is taken to run.
   */
  environmentCheck?: { interpreter: string } | null;
  signal?: AbortSignal;
}

export interface RunBenchmarkResult {
  run: RunRecord;
  tasks: TaskRecord[];
  generation: GenerateResult;
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
  if (input.clearStaleReservations) await store.clearReservations(runId);

  const allTasks = planTasks(input.pset, input.spec);
  await store.putTasks(runId, allTasks);

  // Papers whose oracle fails here would score 0% for every model: their tasks are neither
  // generated nor tested, and reports name them instead of counting them as model failures.
  let broken = new Set<string>();
  if (input.environmentCheck) {
    progress.note('checking that each paper\'s oracle passes in this environment (rcb doctor; --skip-env-check to skip)');
    const papers = await checkEnvironment({ executor: deps.executor, cache: deps.environmentCache }, { pset: input.pset, interpreter: input.environmentCheck.interpreter });
    await store.setRunEnvironment(runId, { python: input.environmentCheck.interpreter, papers, checkedAt: now().toISOString() });
    broken = new Set(papers.filter((p) => !p.runs).map((p) => p.paper));
    for (const p of papers.filter((x) => !x.runs)) {
      const n = allTasks.filter((t) => t.paper === p.paper).length;
      progress.note(`env_broken: ${p.paper} cannot run here (${p.reason}): its ${n} task(s) are left untested and out of the scores`);
    }
  }
  else if (opened.environment) {
    // Resumed without the check: every paper's tasks are now tested, so none is env_broken.
    await store.setRunEnvironment(runId, null);
  }
  const tasks = allTasks.filter((t) => !broken.has(t.paper));
  const envBroken = allTasks.filter((t) => broken.has(t.paper));
  await store.setRunStatus(runId, 'generating');

  const runnable = new Set(tasks.map((t) => t.taskId));
  const judged = new Set((await store.listVerdicts(runId)).map((v) => v.taskId).filter((id) => runnable.has(id)));
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
      // Interrupted: finish the batch in flight (its verdicts are real) but start no other;
      // the rest is left for the resumed run.
      if (input.signal?.aborted) return;
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
          ready.push({ task, completion });
          notify();
        },
      },
    );
    await store.setRunStatus(runId, 'evaluating');
  } finally {
    generationDone = true;
    notify();
    await evaluation.catch(() => undefined);
  }
  await evaluation;
  progress.end('evaluate');

  const complete = tasks.every((t) => judged.has(t.taskId));
  const status: RunStatus = complete ? 'succeeded' : generation.budgetExhausted ? 'budget_exhausted' : input.signal?.aborted ? 'cancelled' : 'failed';
  await store.setRunStatus(runId, status, status === 'failed' ? `${tasks.length - judged.size} task(s) have no verdict` : undefined);
  return { run: (await store.getRun(runId))!, tasks: allTasks, generation, evaluated, envBroken };
}
