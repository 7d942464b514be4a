/**
 * Payloads of the cloud flow: the workflow's input, what each Step Functions task takes and
 * returns, the SQS generation message, and the plan manifest kept in the blob store. Each
 * is a zod schema (checked at the boundary: handler, container, CLI) and its inferred type.
 */
import { z } from 'zod';

/** A model as a run uses it (core/store.ts ModelSpec). */
export const modelSpecSchema = z.object({
  /** The rcb model id (registry id, `oracle`, `empty`, ...). */
  id: z.string().min(1),
  /** Parameters that change answers; part of every task id. */
  params: z.record(z.unknown()),
});

/** The run spec (core/store.ts RunSpec). In the cloud `psetRoot` is the pset bundle's blob key. */
export const runSpecSchema = z.object({
  /** Digest of the selected papers (Pset.digest); checked against the bundle on every load. */
  psetDigest: z.string().min(1),
  /** Blob key of the pset bundle (`psets/<digest>.json`); not part of the run's identity. */
  psetRoot: z.string().min(1),
  models: z.array(modelSpecSchema).min(1),
  samples: z.number().int().min(1),
  withPaper: z.boolean(),
  /** Papers in scope, or null for all. */
  papers: z.array(z.string().min(1)).nullable(),
  /** sha256 of the prompt template's text; the template is at `promptTemplateKey(digest)`. */
  promptTemplateDigest: z.string().min(1),
  /** Wall-clock limit of one test run, seconds. */
  timeoutSec: z.number().positive(),
  /** Hard cap on model spend, USD; null for none. */
  budgetUsd: z.number().nonnegative().nullable(),
});

/** What reports need to know of a model (core/store.ts ModelInfo). */
export const modelInfoSchema = z.object({
  /** Knowledge cutoff month, YYYY-MM. */
  knowledgeCutoff: z.string().optional(),
  displayName: z.string().optional(),
  developer: z.string().optional(),
  open: z.boolean().optional(),
  /** The model's configuration as run. */
  config: z.record(z.unknown()),
});

/**
 * Models of a run that go through their provider's batch API (the cloud batch lane) instead
 * of the SQS lanes. Not part of the run's identity: a task has the same id in either mode, so
 * an answer bought in one is never bought again in the other.
 */
export const batchSettingsSchema = z
  .object({
    /** Model ids of the spec answered in batches (the providers' batch APIs). */
    models: z.array(z.string().min(1)),
    /**
     * Slow models of the spec (`slow: true` in the registry) not in `models`: answered in their
     * provider's background mode through the same lane, at interactive prices. PlanRun adds them.
     */
    background: z.array(z.string().min(1)).optional(),
    /** Batches a task may go through before it is recorded as unanswered. @default 3 */
    maxRounds: z.number().int().positive().optional(),
  })
  .strict();
export type BatchSettings = z.infer<typeof batchSettingsSchema>;

/** Longest generation deadline a run may ask for: the execution's own timeout (3 days) less a day for evaluation. */
export const MAX_DEADLINE_SEC = 2 * 24 * 3600;

/** Execution input of the run workflow, as `rcb cloud run` starts it; PlanRun receives it whole. */
export const runWorkflowInputSchema = z.object({
  /** Id of the run (core/ids.ts runId(spec)); also the execution name. */
  runId: z.string().min(1),
  spec: runSpecSchema,
  /** Report metadata of each model of the spec, by model id. */
  models: z.record(modelInfoSchema),
  /** Plan even when the cost estimate exceeds the budget. */
  force: z.boolean().optional(),
  /** Models answered by the batch lane; none when absent. */
  batch: batchSettingsSchema.optional(),
  /**
   * How long generation may run before CheckProgress fails the run, seconds (`rcb cloud run
   * --deadline`). @default the stack's RCB_GENERATION_TIMEOUT_SEC (24 h)
   */
  deadlineSec: z.number().int().positive().max(MAX_DEADLINE_SEC).optional(),
});
export type RunWorkflowInput = z.infer<typeof runWorkflowInputSchema>;

/**
 * One evaluation shard, sized by work (core/cloud/shard-plan.ts): the candidates of one paper,
 * of one model when `model` is set, and of those the `part`-th of `parts` (by task id).
 */
export const shardRefSchema = z.object({
  /** Paper id. */
  paper: z.string().min(1),
  /** Model id; every model of the paper when absent. */
  model: z.string().min(1).optional(),
  /** This shard's slice of the (paper, model) candidates, 0-based. @default 0 */
  part: z.number().int().nonnegative().optional(),
  /** Slices the (paper, model) candidates are cut into. @default 1 */
  parts: z.number().int().positive().optional(),
});
export type ShardRef = z.infer<typeof shardRefSchema>;

/**
 * The task definition revision and image every shard of a run uses: read from the deployment
 * by the run's first PlanRun and kept (`runs/<runId>/evaluation-pin.json`), so a deploy during
 * a sweep, or between a run and its restart, does not change the evaluator.
 */
export const evaluationPinSchema = z.object({
  /** Full ARN of the task definition revision (`...:task-definition/<family>:<revision>`). */
  taskDefinitionArn: z.string().min(1),
  /** The evaluator image as the revision names it (repository URI and tag, or @digest). */
  image: z.string().min(1),
  /**
   * The Lambda versions the deploy published, by stage (qualified ARNs `...:function:<name>:<n>`),
   * that the run started with; absent in pins stored before versions were published.
   */
  functions: z.record(z.string(), z.string()).optional(),
  pinnedAt: z.string(),
});
export type EvaluationPin = z.infer<typeof evaluationPinSchema>;

/**
 * What PlanRun returns; the workflow keeps it at `$.plan`. The shards themselves are in the
 * blob store (`shardManifestKey`, read by the evaluation Map's ItemReader), so the state's
 * payload stays the same size whatever the sweep.
 */
export const planRunResultSchema = z.object({
  runId: z.string().min(1),
  /** Tasks of the run (snippets x models x samples). */
  taskCount: z.number().int().nonnegative(),
  /** Generation messages sent by this invocation (tasks without a completion). */
  enqueued: z.number().int().nonnegative(),
  /** Worst-case cost of the tasks still to generate, USD (what the budget is checked against). */
  estimatedCostUsd: z.number().nonnegative(),
  /** Unanswered tasks of batch-mode models, left to the batch lane (not enqueued); the workflow skips the lane when 0. */
  batchTasks: z.number().int().nonnegative(),
  /** Shards this execution evaluates: those with a task still unjudged (all of them on a first execution). */
  shardCount: z.number().int().nonnegative(),
  /** Blob key of the JSON array of this execution's shards (ShardRef[]). */
  shardManifestKey: z.string().min(1),
  /** Generation deadline of this run, seconds (CheckProgress reads it). */
  deadlineSec: z.number().int().positive(),
  /** The run's pinned task definition revision (every shard's RunTask names it); the deployed PlanRun always sets it. */
  taskDefinitionArn: z.string().min(1).optional(),
  /** The run's pinned evaluator image. */
  image: z.string().min(1).optional(),
});
export type PlanRunResult = z.infer<typeof planRunResultSchema>;

/** Body of one SQS lane message: generate the completion of one task. */
export const generationMessageSchema = z
  .object({
    /** The run the task belongs to; budget is reserved on this run. */
    runId: z.string().min(1),
    /** The task to answer; looked up in the run's plan manifest. */
    taskId: z.string().min(1),
    /**
     * Answers the task had before, all errors, when a restarted run reopened it (PlanRun,
     * reopenFailedAnswers); recorded on the new answer, so the cap on attempts holds across
     * restarts. Absent: the task's first answer.
     */
    priorAttempts: z.number().int().positive().optional(),
  })
  .strict();
export type GenerationMessage = z.infer<typeof generationMessageSchema>;

/** Input of the CheckProgress, Aggregate and (with a failure) MarkRunFailed tasks. */
export const runRefSchema = z.object({
  runId: z.string().min(1),
});
export type RunRef = z.infer<typeof runRefSchema>;

/**
 * Input of CheckProgress: the run, and when this execution started (`$$.Execution.StartTime`):
 * a run started again gets a new generation deadline and a young run's poll pauses.
 */
export const checkProgressInputSchema = runRefSchema.extend({
  startedAt: z.string().datetime({ offset: true }).optional(),
  /** The run's generation deadline, seconds (PlanRun's `deadlineSec`). @default the function's RCB_GENERATION_TIMEOUT_SEC */
  deadlineSec: z.number().int().positive().optional(),
  /** The execution's name (`$$.Execution.Name`): its waves are kept under it. With `previous`, the check plans waves. */
  execution: z.string().min(1).optional(),
  /**
   * The loop's state before this check (core/cloud/evaluation-waves.ts WaveProgress): the
   * previous check's result, `{ waves: 0 }` at first, and the Map Run of the wave it ran.
   */
  previous: z
    .object({
      waves: z.number().int().nonnegative(),
      waveRun: z
        .object({ ResultWriterDetails: z.object({ Bucket: z.string(), Key: z.string() }).optional() })
        .passthrough()
        .optional(),
    })
    .passthrough()
    .optional(),
});
export type CheckProgressInput = z.infer<typeof checkProgressInputSchema>;

/** Input of one BatchRound: the run, and when this execution started (its pauses grow with the execution's age). */
export const batchRoundInputSchema = checkProgressInputSchema.pick({ runId: true, startedAt: true, deadlineSec: true });
export type BatchRoundInput = z.infer<typeof batchRoundInputSchema>;

/** What one BatchRound returns; kept at `$.batch`, the lane's Choice reads `$.batch.pendingBatches` and its Wait `$.batch.waitSec`. */
export const batchRoundResultSchema = z.object({
  /** Batches still pending at the provider: the lane waits and polls again while there are any. */
  pendingBatches: z.number().int().nonnegative(),
  /** Batch-mode tasks without a completion when the round returned. */
  open: z.number().int().nonnegative(),
  /** Answers (and final failures) stored by this round. */
  settled: z.number().int().nonnegative(),
  /** Batches this round submitted. */
  submitted: z.number().int().nonnegative(),
  /** Pause before the next round, seconds (the lane's Wait SecondsPath). */
  waitSec: z.number().int().positive(),
});
export type BatchRoundResult = z.infer<typeof batchRoundResultSchema>;

/** What CheckProgress returns; kept at `$.progress`, the Choice state reads `$.progress.done`. */
export const checkProgressResultSchema = z.object({
  /** True when generation is over: every task has a completion, or the run stopped generating (budget spent, cancelled). */
  done: z.boolean(),
  total: z.number().int().nonnegative(),
  /** Tasks with a completion (an answer or a final failure). */
  settled: z.number().int().nonnegative(),
  /** Settled tasks whose model call failed for good. */
  failed: z.number().int().nonnegative(),
  /** Pause before the next check, seconds (the Wait state's SecondsPath; core/cloud/generation-polling.ts). */
  waitSec: z.number().int().positive(),
  /** Waves of shards dispatched so far in this execution, this one included (pipelined evaluation). */
  waves: z.number().int().nonnegative().optional(),
  /** The wave to evaluate now: the loop's Distributed Map reads its shards at `key`. */
  wave: z.object({ number: z.number().int().positive(), key: z.string().min(1), shards: z.number().int().positive() }).optional(),
});
export type CheckProgressResult = z.infer<typeof checkProgressResultSchema>;

/** Input of one shard task (the Map item; the container reads it from RCB_RUN_ID and RCB_SHARD). */
export const shardInputSchema = z.object({
  runId: z.string().min(1),
  paper: z.string().min(1),
});
export type ShardInput = z.infer<typeof shardInputSchema>;

/** Final statuses Aggregate sets; any other ending goes through MarkRunFailed. */
export const aggregateStatusSchema = z.enum(['succeeded', 'succeeded_with_errors', 'budget_exhausted', 'cancelled']);

/** Where the evaluation Map's ResultWriter put its Map Run's results (the Map state's `ResultWriterDetails`). */
export const mapResultsSchema = z.object({ Bucket: z.string().min(1), Key: z.string().min(1) });

/**
 * Input of Aggregate: the run, and where its evaluation's results are: the execution whose
 * waves' Map Runs recorded them (pipelined evaluation), or one Map Run's results.
 */
export const aggregateInputSchema = runRefSchema.extend({ mapResults: mapResultsSchema.optional(), execution: z.string().min(1).optional() });
export type AggregateInput = z.infer<typeof aggregateInputSchema>;

/** One shard whose every attempt failed: its tasks without a verdict are recorded infra_error. */
export const infraErrorShardSchema = z.object({
  shard: shardRefSchema,
  /** The error of its last attempt (e.g. States.TaskFailed) and its cause. */
  error: z.string(),
  cause: z.string().optional(),
  /** Its tasks without a verdict when the run was aggregated. */
  taskIds: z.array(z.string()),
});
export type InfraErrorShard = z.infer<typeof infraErrorShardSchema>;

/** `runs/<runId>/infra-errors.json`: the shards of the run's latest execution that failed every attempt. */
export const infraErrorsSchema = z.object({ runId: z.string(), shards: z.array(infraErrorShardSchema), tasks: z.number().int().nonnegative() });
export type InfraErrors = z.infer<typeof infraErrorsSchema>;

/** What Aggregate returns; kept at `$.summary`. */
export const aggregateResultSchema = z.object({
  runId: z.string().min(1),
  status: aggregateStatusSchema,
  /** Blob prefix holding the reports (`runs/<runId>/reports/`). */
  reportPrefix: z.string(),
  /** Tasks recorded infra_error (their shard failed every attempt); the status is then succeeded_with_errors. */
  infraErrorTasks: z.number().int().nonnegative().optional(),
  /** Why the run-ended event was not sent (core/cloud/run-events.ts); the run's status stands. */
  eventError: z.string().optional(),
});
export type AggregateResult = z.infer<typeof aggregateResultSchema>;

/** Step Functions' error object, as a Catch with ResultPath `$.failure` stores it. */
export const stateFailureSchema = z.object({ Error: z.string(), Cause: z.string().optional() });

/** Input of MarkRunFailed. */
export const markRunFailedInputSchema = z.object({
  runId: z.string().min(1),
  failure: stateFailureSchema,
});
export type MarkRunFailedInput = z.infer<typeof markRunFailedInputSchema>;

/** A task as planned (core/store.ts TaskRecord). */
export const taskRecordSchema = z.object({
  taskId: z.string().min(1),
  paper: z.string().min(1),
  file: z.string().min(1),
  snippet: z.string().min(1),
  loc: z.number().int().nonnegative(),
  model: z.string().min(1),
  sample: z.number().int().nonnegative(),
});

/**
 * The plan manifest, `runs/<runId>/plan.json`, written by PlanRun: where the run's inputs
 * are and its tasks by id. The generator reads it (once per warm instance and run) instead
 * of querying the store per message.
 */
export const planManifestSchema = z.object({
  runId: z.string().min(1),
  /** Blob key of the pset bundle. */
  psetKey: z.string().min(1),
  /** Blob key of the prompt template. */
  promptTemplateKey: z.string().min(1),
  tasks: z.array(taskRecordSchema),
  /** The run's batch-mode models (the batch lane answers their tasks). */
  batch: batchSettingsSchema.optional(),
});
export type PlanManifest = z.infer<typeof planManifestSchema>;

/** Where run artifacts live in the blob store (core/cloud/storage-layout.ts). */
export { cloudKeys } from './storage-layout';

/** Parses a payload or throws an error naming the payload and each bad field. */
export function parsePayload<T>(schema: z.ZodType<T, z.ZodTypeDef, unknown>, value: unknown, what: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  throw new PayloadError(`${what} is malformed: ${issues}`);
}

/** A payload that does not match its schema: retrying it cannot help. */
export class PayloadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PayloadError';
  }
}
