/**
 * The BatchClient port: a provider's batch API (OpenAI Batch, Anthropic Message Batches,
 * Gemini batch mode, Bedrock model invocation jobs). Requests are submitted together, the
 * provider answers within its window (24 hours) at about half the interactive price, and
 * the results are fetched once the batch has ended. Providers live in adapters/models/.
 */
import type { ModelErrorKind, ModelResponse, Prompt } from './model';

/** One request of a batch, named by the task it answers. */
export interface BatchRequest {
  /** The task id: how each result is matched to its task. */
  customId: string;
  prompt: Prompt;
}

/** Where a submitted batch is. `ended` covers every terminal state (completed, expired, cancelled, failed). */
export interface BatchStatus {
  state: 'pending' | 'ended';
  /** The provider's own status word, for logs and `rcb sweep status`. */
  providerState: string;
}

/** What became of one request of an ended batch. */
export type BatchItemResult =
  | { customId: string; outcome: 'succeeded'; response: ModelResponse }
  /** The provider answered the request with an error; `billed` when it says the request was charged. */
  | { customId: string; outcome: 'errored'; error: { kind: ModelErrorKind; message: string } }
  /** Never processed: the batch expired or was cancelled before the request's turn. Not billed. */
  | { customId: string; outcome: 'expired' | 'cancelled' };

/** What one batch may hold at most (and, for Bedrock, at least). */
export interface BatchLimits {
  maxRequests: number;
  /** Sum of the prompts' characters, a stand-in for the request size the provider caps. */
  maxPromptChars: number;
  /** Fewer requests are not accepted as a batch (Bedrock); the rest go interactively or wait. @default 1 */
  minRequests?: number;
}

export interface BatchClient {
  /** The rcb model id, as on the interactive client. */
  readonly id: string;
  /** The provider's limits on one batch; absent: rcb's defaults. */
  readonly limits?: BatchLimits;
  /**
   * Submit requests as one batch; resolves with the provider's batch id once it is accepted.
   * `intentId`, chosen by rcb and recorded before the call, is attached to the batch where the
   * provider keeps metadata, so that findByIntent can find it after a crash during the call.
   */
  submit(requests: BatchRequest[], signal?: AbortSignal, intentId?: string): Promise<string>;
  /**
   * The provider's id of the batch submitted with `intentId`, or null when the provider has
   * none (the submit never reached it). Absent for providers that keep no metadata on a batch:
   * a crash inside their submit call is then treated as no batch.
   */
  findByIntent?(intentId: string, signal?: AbortSignal): Promise<string | null>;
  poll(batchId: string, signal?: AbortSignal): Promise<BatchStatus>;
  /**
   * Results of an ended batch, one per request that the provider reports on; a request it
   * does not report on is treated as expired by the caller.
   */
  results(batchId: string, signal?: AbortSignal): Promise<BatchItemResult[]>;
  /** Ask the provider to stop the batch; requests already answered are still billed and returned by results(). */
  cancel(batchId: string, signal?: AbortSignal): Promise<void>;
}

/** Where one of rcb's batches is, as the ledger keeps it. */
export type BatchRecordState =
  /** Recorded before the submit call, so that a crash during it is known. */
  | 'submitting'
  /** Accepted by the provider: its requests may still be answered and billed. */
  | 'pending'
  /** Ended and its results ingested: its budget is settled. */
  | 'ingested'
  /** The submit call failed: no batch exists, nothing was reserved for it any more. */
  | 'not_submitted';

/** One batch rcb submitted, kept in the run's store so that a restarted rcb polls it instead of paying twice. */
export interface BatchRecord {
  /** rcb's own key of the batch, unique in the run. */
  batchKey: string;
  runId: string;
  model: string;
  /** The provider's batch id; null until the provider accepted the batch. */
  providerBatchId: string | null;
  /** The tasks whose requests it holds (the requests' custom ids). */
  taskIds: string[];
  /** Budget held for it: the worst case of every request at the batch price, USD. */
  reservedUsd: number;
  state: BatchRecordState;
  /** The provider's own status word when last polled. */
  providerState?: string;
  submittedAt: string;
  endedAt?: string;
  /** Set when rcb asked the provider to cancel the batch. */
  cancelRequested?: boolean;
  /**
   * rcb's id of the submit, recorded (state `submitting`) before the call and sent with it:
   * a restarted rcb that finds the record still `submitting` asks the provider for the batch
   * of this id before it sends the requests again (the crash window between the provider
   * accepting a batch and the ledger recording it).
   */
  intentId?: string;
}

/** The BatchLedger port: the run's batches, written at each change of state. */
export interface BatchLedger {
  /** Insert or replace the record with this batchKey. */
  putBatch(b: BatchRecord): Promise<void>;
  listBatches(runId: string): Promise<BatchRecord[]>;
}
