/** Ports the cloud use cases need beyond core/store.ts. */
import type { GenerationMessage } from './payloads';
import type { PaperEnvironment } from '../records';

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

/** A paper's environment as one run's shards found it, and where. */
export interface RunPaperEnvironment extends PaperEnvironment {
  /** The image and interpreter it was checked in (`<image digest>@<python>`), or the interpreter alone when the image's digest was unknown. */
  image: string;
  checkedAt: string;
}

/**
 * The environment checks of the cloud's shards (core/cloud/shard-environment.ts): each
 * paper's check once per image, shared by every shard and run started from that image, and
 * what each run's shards found, so that reports and status name the papers that cannot run.
 */
export interface EnvironmentChecks {
  /** The check of a paper (by digest) in an image, if a shard stored one. */
  getImageCheck(image: string, paperDigest: string): Promise<PaperEnvironment | null>;
  /** Stores it; a check stored first is kept (both ran the same oracle in the same image). */
  putImageCheck(image: string, paperDigest: string, result: PaperEnvironment): Promise<void>;
  /**
   * A lease on running that check, as claimGeneration's on a model call: true when the caller
   * now holds it (none, expired, or already the caller's), false while another's stands.
   */
  claimImageCheck(image: string, paperDigest: string, owner: string, leaseMs: number): Promise<boolean>;
  /** Records what a run's shard found for its paper (the latest replaces an earlier one). */
  putRunPaperEnvironment(runId: string, result: RunPaperEnvironment): Promise<void>;
  /** What the run's shards found, one entry per paper checked. */
  listRunPaperEnvironments(runId: string): Promise<RunPaperEnvironment[]>;
}
