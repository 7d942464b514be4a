/** MarkRunFailed: the workflow's catch path records why the run stopped; finished work stays. */
import type { RunStore } from '../store';
import type { MarkRunFailedInput } from './payloads';

export async function markRunFailed(store: RunStore, input: MarkRunFailedInput): Promise<void> {
  const { Error: name, Cause: cause } = input.failure;
  await store.setRunStatus(input.runId, 'failed', cause ? `${name}: ${cause}` : name);
}
