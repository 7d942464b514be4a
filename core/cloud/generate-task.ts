/**
 * Generate, for one SQS message: the completion of one task, under the run's budget.
 * Idempotent on the task id: a task that already has a completion (a duplicate delivery,
 * a resumed run, another run's answer to the same task) costs nothing and changes nothing.
 */
import type { ModelClient } from '../model';
import type { CompletionCache, RunStore } from '../store';
import type { CostModel } from '../run/generate';
import { generateOne } from '../run/generate';
import type { GenerationMessage } from './payloads';
import type { RunContext } from './run-context';
import { RunInputError } from './pset-bundle';

export interface GenerateTaskDeps {
  store: RunStore;
  /** Model clients by model id; resolved by the caller for the run's models. */
  clients: Map<string, ModelClient>;
  costs?: Map<string, CostModel>;
  cache?: CompletionCache;
  now?: () => Date;
}

/**
 * How the message was settled. `skipped`: the task already had a completion, or the run is
 * no longer generating (cancelled, failed, budget spent). `budget_exhausted`: nothing was
 * called and the run was marked budget_exhausted. Every outcome acknowledges the message;
 * only a thrown error (store, network) leaves it for redelivery.
 */
export type GenerateTaskOutcome = 'called' | 'reused' | 'failed' | 'skipped' | 'budget_exhausted';

export interface GenerateTaskResult {
  outcome: GenerateTaskOutcome;
  taskId: string;
  model: string;
  costUsd: number;
}

const GENERATING: ReadonlySet<string> = new Set(['planned', 'generating']);

export async function generateTask(deps: GenerateTaskDeps, ctx: RunContext, message: GenerationMessage): Promise<GenerateTaskResult> {
  const task = ctx.tasks.get(message.taskId);
  if (!task) throw new RunInputError(`task ${message.taskId} is not in the plan of run ${message.runId}`);
  const result = (outcome: GenerateTaskOutcome, costUsd = 0): GenerateTaskResult => ({ outcome, taskId: task.taskId, model: task.model, costUsd });

  if ((await deps.store.getCompletions([task.taskId])).has(task.taskId)) return result('skipped');
  // Status is read fresh: a cancelled run or a spent budget stops further paid calls.
  const run = await deps.store.getRun(message.runId);
  if (!run) throw new RunInputError(`no run ${message.runId} in the run store`);
  if (!GENERATING.has(run.status)) return result('skipped');

  const paper = ctx.pset.papers.find((p) => p.meta.id === task.paper);
  if (!paper) throw new RunInputError(`task ${task.taskId} names paper "${task.paper}", which is not in the pset`);
  const done = await generateOne(deps, { runId: message.runId, paper, template: ctx.template, withPaper: run.spec.withPaper, task });
  switch (done.outcome) {
    case 'budget_exhausted':
      await deps.store.setRunStatus(message.runId, 'budget_exhausted');
      return result('budget_exhausted');
    case 'aborted':
      throw new Error(`generation of task ${task.taskId} was aborted`);
    default:
      return result(done.outcome, done.completion.costUsd);
  }
}
