/**
 * A stage of the cloud run (its Lambda entry point is functions/check-progress/handler.ts):
 * CheckProgress (Step Functions task, in the Wait -> CheckProgress -> GenerationDone? loop):
 * report whether generation is over (every task has a completion, or the run stopped
 * generating). Owns the generation deadline: past RCB_GENERATION_TIMEOUT_SEC since the run
 * was created it throws, which sends the run to MarkRunFailed. A thin adapter over
 * core/cloud/check-progress.ts.
 *
 * It also says how long the workflow waits before the next check (`waitSec`, growing with the
 * run's age: core/cloud/generation-polling.ts), so the loop stays far below the history limit.
 *
 * With the execution and the loop's state in its input it also plans pipelined evaluation:
 * the shards whose tasks are all settled become the next wave (core/cloud/evaluation-waves.ts).
 *
 * Environment: RCB_TABLE, RCB_BUCKET, RCB_GENERATION_TIMEOUT_SEC, RCB_POLL_MIN_SEC, RCB_POLL_MAX_SEC.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { checkProgress, GenerationTimeoutError } from '../../core/cloud/check-progress';
import { budgetSignals } from '../../core/cost/infra-budget-signals';
import { DEFAULT_POLL_SCHEDULE, type PollSchedule } from '../../core/cloud/generation-polling';
import type { RunCounters } from '../../core/cloud/ports';
import { checkProgressInputSchema, parsePayload, type CheckProgressInput, type CheckProgressResult } from '../../core/cloud/payloads';
import type { BlobStore, RunStore } from '../../core/store';
import { loadStorageConfig, positiveNumberEnv, type StorageConfig } from '../../adapters/aws/runtime/cloud-config';
import { createStorageAdapters } from '../../adapters/aws/runtime/cloud-adapters';
import { lambdaTelemetry, stageHandler, type StageHandler, type StageTracer } from '../../adapters/aws/runtime/stage-lifecycle';
import type { CloudStage } from './cloud-stage';

export { checkProgressInputSchema };
export type { CheckProgressInput, CheckProgressResult };

export interface CheckProgressConfig {
  storage: StorageConfig;
  /** RCB_GENERATION_TIMEOUT_SEC. */
  generationTimeoutSec: number;
  /** RCB_POLL_MIN_SEC, RCB_POLL_MAX_SEC: pauses between checks (default DEFAULT_POLL_SCHEDULE). */
  schedule: PollSchedule;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): CheckProgressConfig {
  const schedule = {
    minSec: env.RCB_POLL_MIN_SEC ? positiveNumberEnv(env, 'RCB_POLL_MIN_SEC') : DEFAULT_POLL_SCHEDULE.minSec,
    maxSec: env.RCB_POLL_MAX_SEC ? positiveNumberEnv(env, 'RCB_POLL_MAX_SEC') : DEFAULT_POLL_SCHEDULE.maxSec,
  };
  return { storage: loadStorageConfig(env), generationTimeoutSec: positiveNumberEnv(env, 'RCB_GENERATION_TIMEOUT_SEC'), schedule };
}

export interface CheckProgressHandlerDeps {
  store: RunStore;
  /** The artifacts bucket: the execution's shard manifest and its evaluation waves. */
  blobs?: BlobStore;
  generationTimeoutSec: number;
  schedule?: PollSchedule;
  /** Progress counters on the run item (one read per check while generation goes on). */
  counters?: RunCounters;
  logger: Logger;
  metrics: Metrics;
  tracer?: StageTracer;
  now?: () => Date;
}

export function createHandler(getDeps: () => CheckProgressHandlerDeps): StageHandler<unknown, CheckProgressResult> {
  return stageHandler({ failure: 'progress check failed' }, getDeps, async (event: unknown, deps, invocation) => {
    const input = parsePayload(checkProgressInputSchema, event, 'CheckProgress input');
    invocation.annotate({ runId: input.runId });
    try {
      const progress = await checkProgress(deps.store, input.runId, {
        // The run's own deadline (rcb cloud run --deadline), else the stack's.
        deadlineMs: (input.deadlineSec ?? deps.generationTimeoutSec) * 1000,
        startedAt: input.startedAt,
        schedule: deps.schedule,
        counters: deps.counters,
        now: deps.now,
        // Pipelined evaluation: a definition that passes its execution and loop state gets waves.
        ...(input.execution && input.previous && deps.blobs ? { waves: { blobs: deps.blobs, execution: input.execution, previous: input.previous } } : {}),
      });
      deps.logger.info('generation progress', { ...progress });
      deps.metrics.addMetric('TasksSettled', MetricUnit.Count, progress.settled);
      // Counted from the store, for the alarms of infra/monitoring-construct.ts.
      deps.metrics.addMetric('TasksFailed', MetricUnit.Count, progress.failed);
      const run = progress.done ? null : await deps.store.getRun(input.runId);
      const budget = run ? budgetSignals(run, progress) : null;
      if (budget) {
        deps.metrics.addMetric('BudgetSpentPercent', MetricUnit.Percent, budget.spentPercent);
        if (budget.projectedPercent !== null) deps.metrics.addMetric('BudgetProjectedPercent', MetricUnit.Percent, budget.projectedPercent);
      }
      return progress;
    } catch (err) {
      if (err instanceof GenerationTimeoutError) deps.metrics.addMetric('RunsPastGenerationDeadline', MetricUnit.Count, 1);
      throw err;
    }
  });
}

/** The deployed function's: AWS adapters from its configuration. */
export function deployedCheckProgressDeps(config: CheckProgressConfig): CheckProgressHandlerDeps {
  const telemetry = lambdaTelemetry('check-progress');
  const storage = createStorageAdapters(config.storage, { tracer: telemetry.tracer });
  return {
    store: storage.store,
    blobs: storage.blobs,
    counters: storage.counters,
    generationTimeoutSec: config.generationTimeoutSec,
    schedule: config.schedule,
    ...telemetry,
  };
}

/** The stage's entry of app/stages/index.ts. */
export const checkProgressStage = {
  trigger: { state: 'CheckProgress', placement: 'phase' },
  function: {
    construct: 'orchestrator',
    id: 'CheckProgressFunction',
    dir: 'check-progress',
    description: 'rcb: reports whether every task of a run has a completion',
  },
  loadConfig,
  deployedDeps: deployedCheckProgressDeps,
  localDeps: (parts) => ({
    store: parts.storage.store,
    blobs: parts.storage.blobs,
    counters: parts.storage.counters,
    generationTimeoutSec: parts.generationTimeoutSec ?? 24 * 3600,
    ...parts.telemetry('check-progress'),
  }),
  createHandler,
  monitoring: { name: 'check-progress' },
} satisfies CloudStage<CheckProgressConfig, CheckProgressHandlerDeps>;
