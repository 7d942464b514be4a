/**
 * The RunStore and BlobStore ports and the records they hold. Every write that can be
 * repeated (a resumed run, a duplicate SQS delivery) is conditional: the first write wins
 * and a repeat changes nothing.
 */
import type { FailureClass, CappedLog, PaperMeta, TokenUsage } from './types';
import type { FinishReason } from './model';
import type { DriverReport } from './executor';

/** A model as a run uses it: the id and the parameters that change its answers. */
export interface ModelSpec {
  id: string;
  params: Record<string, unknown>;
}

/** What a run is: everything that decides its task ids, plus its budget. */
export interface RunSpec {
  psetDigest: string;
  /** Where the pset was read from (informational; not part of the identity). */
  psetRoot: string;
  models: ModelSpec[];
  samples: number;
  withPaper: boolean;
  /** Papers in scope, or null for all. */
  papers: string[] | null;
  promptTemplateDigest: string;
  timeoutSec: number;
  /** Hard cap on model spend, USD; null for none. Not part of the run's identity. */
  budgetUsd: number | null;
}

export type RunStatus =
  | 'planned'
  | 'generating'
  | 'evaluating'
  | 'aggregating'
  | 'succeeded'
  | 'failed'
  | 'budget_exhausted'
  | 'cancelled';

/** What reports need to know of a model, kept with the run. */
export interface ModelInfo {
  /** Knowledge cutoff month, YYYY-MM, for the contamination-safe subsets. */
  knowledgeCutoff?: string;
  /** The model's configuration as run (the `llm_cfg` of official results). */
  config: Record<string, unknown>;
}

/** Whether a paper's tests run in the environment a run's tests run in (its oracle passes there). */
export interface PaperEnvironment {
  paper: string;
  runs: boolean;
  /** For a paper that does not run: the missing module, else the first error line. */
  reason: string | null;
}

/** The environment check a run's tasks were tested under (`rcb run` without --skip-env-check). */
export interface RunEnvironment {
  /** The interpreter the tests run with. */
  python: string;
  papers: PaperEnvironment[];
  checkedAt: string;
}

export interface RunRecord {
  runId: string;
  spec: RunSpec;
  /** 'rcb' for runs planned here; 'import' for results loaded from overall_stats.json. */
  source: 'rcb' | 'import';
  /** Metadata of the papers in scope, kept so reports do not need the pset. */
  papers: PaperMeta[];
  models: Record<string, ModelInfo>;
  status: RunStatus;
  createdAt: string;
  updatedAt: string;
  /** Settled spend, USD. */
  spentUsd: number;
  /** Spend reserved by calls in flight, USD. */
  reservedUsd: number;
  error?: string;
  /**
   * The latest environment check of the run; tasks of papers that do not run are env_broken:
   * kept out of the scores and named in reports. Absent when the check was skipped.
   */
  environment?: RunEnvironment;
}

/** One task of a run: (paper, file, snippet) x model x sample. */
export interface TaskRecord {
  taskId: string;
  paper: string;
  file: string;
  snippet: string;
  loc: number;
  model: string;
  sample: number;
}

/** A model's answer for a task, cached by task id across runs. */
export interface CompletionRecord {
  taskId: string;
  model: string;
  /** Raw answer text; empty when the call failed. */
  text: string;
  usage: TokenUsage;
  /** Spend counted for the task, USD: the billed usage plus `assumedCostUsd`. */
  costUsd: number;
  /**
   * Attempts that failed in a way the provider may still bill (timeout, broken connection,
   * unreadable answer), counted at their worst case because their usage is unknown.
   */
  assumedCostUsd?: number;
  finishReason: FinishReason | 'error';
  /** Set when the call failed for good (non-retryable, or attempts exhausted). */
  error?: { kind: string; message: string; status?: number };
  /**
   * Which answer of the task this is: 1 (or absent) for the first; more when earlier
   * answers were errors and a resumed run asked again (see reopenFailedAnswers).
   */
  attempt?: number;
  /** The provider's batch that answered it, when it came through a batch API. */
  batchId?: string;
  latencyMs: number;
  createdAt: string;
}

/**
 * What a test run showed, kept with its verdict so that a judge can be applied again
 * (`rcb rejudge`) without running the test: with the verdict's exitCode, signal, logs and
 * durations, it is the RawExecution the verdict was judged from.
 */
export interface VerdictEvidence {
  /** Why the executor stopped the process, if it did. */
  killedFor: 'timeout' | 'output' | null;
  /** SPEC 7 error markers seen anywhere in the full stdout or stderr (also in parts cut from the kept logs). */
  markersSeen: string[];
  /** The in-sandbox driver's report (unittest counts, how the script ended, its flags); null when the process never reached its exit hook. */
  driver: DriverReport | null;
  /** Base files the run changed or removed. */
  tamperedFiles: string[];
  /** Whether the paper's test entry point uses unittest (the strict judge then needs tests to have run). */
  testUsesUnittest: boolean;
  /** Where the logs are: the verdict's own stdout and stderr (head and tail, the cut marked); rcb keeps no other copy. */
  logsAt: 'verdict';
}

/** The judged outcome of one task. */
export interface Verdict {
  taskId: string;
  /** SPEC 7 original rule: exit 0 and no error marker in the output. */
  officialPass: boolean;
  /** Official pass plus evidence the suite ran to its end and succeeded, and no integrity flag. */
  strictPass: boolean;
  /** Why strict judging failed or what looked suspicious (named flags). */
  flags: string[];
  /**
   * Class of the failure (SPEC 10): 'no_code' for an answer without code (whatever the
   * official rule said of its test); otherwise the official failure's class; 'integrity'
   * when only the strict judge failed; null when both pass.
   */
  failureClass: FailureClass | null;
  exitCode: number | null;
  signal: string | null;
  durationMs: number;
  stdout: CappedLog;
  stderr: CappedLog;
  executor: 'cold' | 'warm' | 'none';
  sandbox: 'bwrap' | 'uid' | 'none';
  createdAt: string;
  /** What the test run showed; absent for verdicts without a run and for those written before rcb kept it. */
  evidence?: VerdictEvidence;
}

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
