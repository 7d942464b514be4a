/** Ports the cloud use cases need beyond core/store.ts. */
import type { GenerationMessage } from './payloads';

/** A generation message with the model of its task, so the queue can pick the provider's lane. */
export interface QueuedGeneration {
  message: GenerationMessage;
  /** Model id of the task (the adapter maps it to a provider lane). */
  model: string;
}

/** Generation work for the cloud: SQS lanes in AWS, a list in the emulator and the tests. */
export interface TaskQueue {
  /** Sends every message or throws; a message sent twice is harmless (the generator is idempotent). */
  send(messages: QueuedGeneration[]): Promise<void>;
}

/** Counters a run item carries, so progress is read in one item instead of a scan of every task. */
export interface RunCountValues {
  /** Tasks planned (set by PlanRun). */
  total: number;
  /** Tasks with a completion (answer or final failure). */
  settled: number;
  /** Settled tasks whose call failed for good (dead letters included). */
  failed: number;
  /** Verdicts written. */
  judged: number;
}

/**
 * Progress counters on the run item: atomic adds by the workers that settle a task or write a
 * verdict (DynamoDB ADD). A fast path only: an add lost to a crash between a write and its
 * count leaves a counter low, so a reader that finds a counter complete checks the items once.
 */
export interface RunCounters {
  setTotal(runId: string, total: number): Promise<void>;
  addCounts(runId: string, delta: Partial<Omit<RunCountValues, 'total'>>): Promise<void>;
  /** Null when the run item has no counters (planned before they existed). */
  getCounts(runId: string): Promise<RunCountValues | null>;
}
