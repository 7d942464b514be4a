/**
 * The domain records of a run: what a run is (RunSpec), the run, its tasks, their answers and
 * verdicts. The ports that store them are in store.ts.
 */
import type { FailureClass, CappedLog, PaperMeta, TokenUsage } from './types';
import type { FinishReason } from './model';
import type { DriverReport } from './executor';
import type { SubsetFile } from './subset/subset-file';

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
  /**
   * Only the tasks of a calibrated subset (`rcb run --subset FILE`, docs/subsets.md): its
   * sha256 is part of the run's identity, its tasks limit the plan, and the whole subset
   * file is kept so that reports estimate the full-set score without the file at hand.
   * Absent for a run of every task.
   */
  subset?: RunSubset;
}

/** The subset a run is limited to (RunSpec.subset). */
export interface RunSubset {
  /** sha256 of the subset file's canonical JSON: what the run id follows. */
  sha256: string;
  /** Where the file was read from (informational; not part of the identity). */
  source: string;
  /** The subset file itself (core/subset/subset-file.ts, schema rcb-subset/1), as parsed. */
  file: SubsetFile;
}

export type RunStatus =
  | 'planned'
  | 'generating'
  | 'evaluating'
  | 'aggregating'
  | 'succeeded'
  | 'succeeded_with_errors'
  | 'failed'
  | 'budget_exhausted'
  | 'cancelled';

/** What reports need to know of a model, kept with the run. */
export interface ModelInfo {
  /** Knowledge cutoff month, YYYY-MM, for the contamination-safe subsets. */
  knowledgeCutoff?: string;
  /** The name a reader knows the model by (the original's `llm_cfg.pretty_name`, the registry's `display_name`). */
  displayName?: string;
  /** Who made it (`llm_cfg.developer`, the registry's `developer`). */
  developer?: string;
  /** Whether its weights are published (`llm_cfg.is_open`, the registry's `open`). */
  open?: boolean;
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
  killedFor: 'timeout' | 'output' | 'disk' | null;
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
