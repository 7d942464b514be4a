/** MarkRunFailed: the workflow's catch path records why the run stopped; finished work stays. */
import type { RunStore } from '../store';
import type { MarkRunFailedInput } from './payloads';
import { announceRunEnded, runFailedDetail, type EventPublisher } from './run-events';

/** Records the failure and sends the run-ended event; resolves with why the event was not sent, if it was not. */
export async function markRunFailed(store: RunStore, input: MarkRunFailedInput, events?: EventPublisher): Promise<string | undefined> {
  const { Error: name, Cause: cause } = input.failure;
  const error = cause ? `${name}: ${cause}` : name;
  await store.setRunStatus(input.runId, 'failed', error);
  const run = await store.getRun(input.runId);
  const spend = { spentUsd: run?.spentUsd ?? 0, budgetUsd: run?.spec.budgetUsd ?? null };
  return announceRunEnded(events, runFailedDetail(input.runId, spend, error));
}
