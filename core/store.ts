/**
 * The RunStore and BlobStore ports (the records they hold are in records.ts). Every write
 * that can be repeated (a resumed run, a duplicate SQS delivery) is conditional: the first
 * write wins and a repeat changes nothing.
 */
import type { CompletionRecord, RunEnvironment, RunRecord, RunStatus, TaskRecord, Verdict } from './records';

export interface RunStore {
  /** Create the run if absent; returns the stored record (existing or new). */
  createRun(run: RunRecord): Promise<RunRecord>;
  getRun(runId: string): Promise<RunRecord | null>;
  setRunStatus(runId: string, status: RunStatus, error?: string): Promise<void>;
  /** Update the budget of an existing run (a resumed run may raise it). */
  setRunBudget(runId: string, budgetUsd: number | null): Promise<void>;
  /** Record the run's environment check, replacing an earlier one (a resumed run checks again); null removes it. */
  setRunEnvironment(runId: string, environment: RunEnvironment | null): Promise<void>;

  /** Insert tasks that are not there yet; existing ones are left as they are. */
  putTasks(runId: string, tasks: TaskRecord[]): Promise<void>;
  listTasks(runId: string): Promise<TaskRecord[]>;

  /** First write wins; returns false when a completion for the task already existed. */
  putCompletion(c: CompletionRecord): Promise<boolean>;
  getCompletions(taskIds: string[]): Promise<Map<string, CompletionRecord>>;

  /**
   * Drop the task's stored answer and the run's verdict on it, in one step, if that answer
   * is an error (`error` set); true when it did. A resumed run then asks the model again.
   * Optional: a store without it keeps error answers for good.
   */
  reopenTask?(runId: string, taskId: string): Promise<boolean>;

  /** First write wins; returns false when a verdict for the task already existed in the run. */
  putVerdict(runId: string, v: Verdict): Promise<boolean>;
  listVerdicts(runId: string): Promise<Verdict[]>;
  /**
   * The run's verdicts on these tasks, by task id (tasks without one are absent): what one
   * evaluation shard reads, a few of the run's verdicts rather than every one.
   */
  getVerdicts(runId: string, taskIds: string[]): Promise<Map<string, Verdict>>;

  /**
   * Reserve `usd` of the run's budget in one atomic step: succeeds only while
   * spent + reserved + usd <= budget (or the run has no budget).
   */
  reserveBudget(runId: string, usd: number): Promise<boolean>;
  /** Release a reservation and add the billed amount to the spend, atomically. */
  settleBudget(runId: string, reservedUsd: number, actualUsd: number): Promise<void>;
  /**
   * Drop every reservation of the run. Only for a runner that knows no call of the run is
   * in flight (a local run resuming after a crash, whose reservations died with it).
   */
  clearReservations(runId: string): Promise<void>;

  /**
   * Take the in-flight claim on a task's generation, so that two workers handling copies of
   * the same task at once (a duplicate SQS delivery to a second Lambda instance) do not both
   * pay for the answer. One atomic step: true when the caller now holds the claim (there was
   * none, the one there had expired, or it was already the caller's, whose lease is then
   * renewed), false while another owner's unexpired claim stands.
   *
   * The claim is a lease of `leaseMs` from now, not a lock: a holder that crashes or times
   * out without releasing stops blocking the task once its lease runs out, and a later
   * delivery can then take the claim and retry. Owners are opaque ids that must be unique
   * per handling (two copies of one SQS message must not share one). A claim says nothing
   * about completions: callers check for the completion again after claiming, since the
   * previous holder may have stored it and released in between.
   */
  claimGeneration(taskId: string, owner: string, leaseMs: number): Promise<boolean>;
  /**
   * Give up the claim on a task's generation, if `owner` holds it (expired or not); another
   * owner's claim, or none, is left as it is.
   */
  releaseGeneration(taskId: string, owner: string): Promise<void>;

  close(): Promise<void>;
}

/** Completions shared across runs, by task id (a paid answer is never bought twice). */
export interface CompletionCache {
  get(taskId: string): Promise<CompletionRecord | null>;
  put(c: CompletionRecord): Promise<void>;
}

/** Opaque byte storage: pset archives, prompts, logs, reports. */
export interface BlobStore {
  put(key: string, body: Buffer | string, contentType?: string): Promise<void>;
  get(key: string): Promise<Buffer | null>;
  list(prefix: string): Promise<string[]>;
}
