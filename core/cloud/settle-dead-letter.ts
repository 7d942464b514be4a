/**
 * A generation message that reached a lane's dead-letter queue: every delivery of it ended
 * without settling its task (the generator crashed, timed out, or kept failing on the
 * store). Left there, the task would have no completion and the run would wait until its
 * generation deadline. Settled here as a failed completion (`generation_error`, kind
 * `dead_lettered`), first write wins: a completion stored meanwhile by a late delivery
 * stays, and a second copy of the dead letter changes nothing.
 */
import type { RunStore } from '../store';
import type { CompletionRecord, TaskRecord } from '../records';
import type { GenerationMessage } from './payloads';
import type { RunCounters } from './ports';

export type SettleDeadLetterOutcome = 'settled' | 'already_settled' | 'unknown_task';

export interface SettleDeadLetterDeps {
  store: RunStore;
  /** The run's tasks, by id (cached by the caller per run). */
  tasksOf(runId: string): Promise<Map<string, TaskRecord>>;
  /** Progress counters on the run item. @default none */
  counters?: RunCounters;
  now?: () => Date;
}

/** The failed completion a dead-lettered task gets. */
export function deadLetterCompletion(task: TaskRecord, receiveCount: number | undefined, now: Date, priorAttempts?: number): CompletionRecord {
  const deliveries = receiveCount ? `${receiveCount} deliveries` : 'its deliveries';
  return {
    taskId: task.taskId,
    model: task.model,
    text: '',
    usage: { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0 },
    costUsd: 0,
    finishReason: 'error',
    error: {
      kind: 'dead_lettered',
      message: `the generation message was dead-lettered after ${deliveries} that did not settle the task (generator crash or timeout)`,
    },
    latencyMs: 0,
    createdAt: now.toISOString(),
    // Counted as an answer: a restart reopens it only while the task is under its cap.
    ...(priorAttempts ? { attempt: priorAttempts + 1 } : {}),
  };
}

export async function settleDeadLetter(deps: SettleDeadLetterDeps, message: GenerationMessage, receiveCount?: number): Promise<SettleDeadLetterOutcome> {
  const task = (await deps.tasksOf(message.runId)).get(message.taskId);
  // A message of a run or task that is not planned (deleted, or never valid): nothing to settle.
  if (!task) return 'unknown_task';
  const existing = (await deps.store.getCompletions([task.taskId])).get(task.taskId);
  if (existing) {
    await deps.counters?.addCounts(message.runId, { settled: 1, failed: existing.error ? 1 : 0 });
    return 'already_settled';
  }
  const stored = await deps.store.putCompletion(deadLetterCompletion(task, receiveCount, (deps.now ?? (() => new Date()))(), message.priorAttempts));
  await deps.counters?.addCounts(message.runId, { settled: 1, failed: 1 });
  return stored ? 'settled' : 'already_settled';
}
