/**
 * Whether starting a finished cloud run again would do anything: tasks whose answer is an
 * error (dead-lettered, a provider failure) with fewer answers than the cap are reopened
 * by PlanRun (reopenFailedAnswers, as a local run does), so a succeeded run with such tasks
 * is worth a new attempt; one whose failures are all at the cap is not.
 */
import type { RunStore } from '../store';
import { MAX_ANSWER_ATTEMPTS } from '../run/generate';

/** Tasks of the run whose answer is an error under the cap of attempts. */
export async function retryableFailedTasks(store: RunStore, runId: string, maxAttempts: number = MAX_ANSWER_ATTEMPTS): Promise<string[]> {
  const tasks = await store.listTasks(runId);
  const completions = await store.getCompletions(tasks.map((t) => t.taskId));
  return [...completions.values()].filter((c) => c.error && (c.attempt ?? 1) < maxAttempts).map((c) => c.taskId);
}
