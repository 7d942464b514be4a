/**
 * Whether starting a finished cloud run again would do anything: tasks whose answer is an
 * error (dead-lettered, a provider failure) with fewer answers than the cap are reopened
 * by PlanRun (reopenFailedAnswers, as a local run does), so a succeeded run with such tasks
 * is worth a new attempt; one whose failures are all at the cap is not.
 */
import type { RunStore } from '../store';
import { MAX_ANSWER_ATTEMPTS } from '../run/generate';

/**
 * Tasks of the run whose answer is an error under the cap of attempts, and, when the run
 * ended succeeded_with_errors (a shard failed every attempt), its answered tasks without a
 * verdict: its infra_error tasks, which a new attempt evaluates (PlanRun lists their shards only).
 */
export async function retryableFailedTasks(store: RunStore, runId: string, maxAttempts: number = MAX_ANSWER_ATTEMPTS): Promise<string[]> {
  const tasks = await store.listTasks(runId);
  const completions = await store.getCompletions(tasks.map((t) => t.taskId));
  const failed = [...completions.values()].filter((c) => c.error && (c.attempt ?? 1) < maxAttempts).map((c) => c.taskId);
  const run = await store.getRun(runId);
  if (run?.status !== 'succeeded_with_errors') return failed;
  const judged = new Set((await store.listVerdicts(runId)).map((v) => v.taskId));
  const unjudged = tasks.filter((t) => completions.has(t.taskId) && !judged.has(t.taskId) && !failed.includes(t.taskId)).map((t) => t.taskId);
  return [...failed, ...unjudged];
}
