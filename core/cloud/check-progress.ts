/**
 * CheckProgress: is generation over? It is when every task of the run has a completion
 * (an answer or a final failure), or when the run stopped generating (budget spent,
 * cancelled); evaluation then judges what there is.
 */
import type { RunStore } from '../store';
import type { CheckProgressResult } from './payloads';
import { RunInputError } from './pset-bundle';
import { pollWaitSec, type PollSchedule } from './generation-polling';
import type { RunCounters } from './ports';

export interface CheckProgressOptions {
  /** Longest generation may run, from the run's creation, before the run is failed; ms. */
  deadlineMs?: number;
  /** When the execution started (its deadline and pauses count from there). @default the run's creation */
  startedAt?: string;
  /**
   * Progress counters on the run item: while they say tasks are unsettled, the check reads
   * one item instead of every task and completion. @default none (always the items)
   */
  counters?: RunCounters;
  /** Pauses between checks. @default DEFAULT_POLL_SCHEDULE */
  schedule?: PollSchedule;
  now?: () => Date;
}

/** Generation outlived its deadline: the run goes to the failure path. */
export class GenerationTimeoutError extends Error {
  constructor(runId: string, settled: number, total: number) {
    super(`run ${runId}: generation passed its deadline with ${total - settled} of ${total} task(s) unanswered`);
    this.name = 'GenerationTimeoutError';
  }
}

export async function checkProgress(store: RunStore, runId: string, options: CheckProgressOptions = {}): Promise<CheckProgressResult> {
  const run = await store.getRun(runId);
  if (!run) throw new RunInputError(`no run ${runId} in the run store`);
  const ageMs = (options.now ?? (() => new Date()))().getTime() - Date.parse(options.startedAt ?? run.createdAt);
  const waitSec = pollWaitSec(Math.max(0, ageMs) / 1000, options.schedule);
  const stopped = run.status === 'budget_exhausted' || run.status === 'cancelled';
  const counts = options.counters && !stopped ? await options.counters.getCounts(runId) : null;
  const pastDeadline = options.deadlineMs !== undefined && ageMs > options.deadlineMs;
  // Counters never run ahead of the items by more than duplicates; complete or late, the items decide.
  if (counts && counts.settled < counts.total && !pastDeadline) {
    return { done: false, total: counts.total, settled: counts.settled, failed: Math.min(counts.failed, counts.settled), waitSec };
  }
  const tasks = await store.listTasks(runId);
  const completions = await store.getCompletions(tasks.map((t) => t.taskId));
  const settled = completions.size;
  const failed = [...completions.values()].filter((c) => c.error).length;
  const done = settled === tasks.length || stopped;
  if (!done && pastDeadline) throw new GenerationTimeoutError(runId, settled, tasks.length);
  // Evaluation is next; a stopped run keeps the status that says why.
  if (done && (run.status === 'planned' || run.status === 'generating')) await store.setRunStatus(runId, 'evaluating');
  return { done, total: tasks.length, settled, failed, waitSec };
}
