/**
 * A stage of the cloud run (its Lambda entry point is functions/batch-round/handler.ts):
 * BatchRound (Step Functions task, in the batch lane's BatchRound -> BatchesPending? -> Wait
 * loop beside the generation wait): one round of the run's batch lane through
 * core/cloud/batch-round.ts: submit what fits, poll each pending batch once, ingest the
 * ended ones, with the batch clients of the deployed registry and the provider keys of the
 * keys secret. Returns at once: the state machine waits between rounds, no Lambda does.
 *
 * Environment: RCB_TABLE, RCB_BUCKET, RCB_KEYS_SECRET_ARN, RCB_BATCH_POLL_MIN_SEC,
 * RCB_BATCH_POLL_MAX_SEC, RCB_GENERATION_TIMEOUT_SEC (RCB_SECRETS_ENDPOINT, like the storage endpoints, only for the
 * emulator's local servers).
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { batchRound, DEFAULT_BATCH_POLL_SCHEDULE } from '../../core/cloud/batch-round';
import { scheduleForDeadline } from '../../core/cloud/check-progress';
import { batchRoundInputSchema, parsePayload, type BatchRoundInput, type BatchRoundResult } from '../../core/cloud/payloads';
import { RunContextCache, type RunContext } from '../../core/cloud/run-context';
import type { PollSchedule } from '../../core/cloud/generation-polling';
import type { KeySource } from '../../core/keys';
import { createSecretsManagerClient } from '../../adapters/aws/clients';
import { SecretsManagerKeySource } from '../../adapters/aws/secrets-key-source';
import { HostedModels } from '../../adapters/models/hosted-models';
import { loadStorageConfig, once, positiveNumberEnv, requiredEnv, type StorageConfig } from '../../adapters/aws/runtime/cloud-config';
import { createStorageAdapters, type StorageAdapters } from '../../adapters/aws/runtime/cloud-adapters';
import { lambdaTelemetry, stageHandler, type StageHandler, type StageTracer } from '../../adapters/aws/runtime/stage-lifecycle';
import { loadDeployedRegistry, resolveRunBatchModels, type RunBatchModels } from '../models';
import type { CloudStage } from './cloud-stage';

export { batchRoundInputSchema };
export type { BatchRoundInput, BatchRoundResult };

export interface BatchRoundConfig {
  storage: StorageConfig;
  /** RCB_KEYS_SECRET_ARN: the provider keys secret. */
  keysSecretArn: string;
  /** RCB_SECRETS_ENDPOINT: a local Secrets Manager (the emulator's); AWS when unset. */
  secretsEndpoint?: string;
  /** RCB_BATCH_POLL_MIN_SEC, RCB_BATCH_POLL_MAX_SEC: pauses between rounds (default DEFAULT_BATCH_POLL_SCHEDULE). */
  schedule: PollSchedule;
  /** RCB_GENERATION_TIMEOUT_SEC: the generation deadline, past which pending batches are cancelled. */
  deadlineSec?: number;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): BatchRoundConfig {
  return {
    storage: loadStorageConfig(env),
    keysSecretArn: requiredEnv(env, 'RCB_KEYS_SECRET_ARN'),
    secretsEndpoint: env.RCB_SECRETS_ENDPOINT || undefined,
    schedule: {
      minSec: env.RCB_BATCH_POLL_MIN_SEC ? positiveNumberEnv(env, 'RCB_BATCH_POLL_MIN_SEC') : DEFAULT_BATCH_POLL_SCHEDULE.minSec,
      maxSec: env.RCB_BATCH_POLL_MAX_SEC ? positiveNumberEnv(env, 'RCB_BATCH_POLL_MAX_SEC') : DEFAULT_BATCH_POLL_SCHEDULE.maxSec,
    },
    deadlineSec: env.RCB_GENERATION_TIMEOUT_SEC ? positiveNumberEnv(env, 'RCB_GENERATION_TIMEOUT_SEC') : undefined,
  };
}

export interface BatchRoundHandlerDeps extends StorageAdapters {
  keys: KeySource;
  schedule?: PollSchedule;
  deadlineSec?: number;
  logger: Logger;
  metrics: Metrics;
  tracer?: StageTracer;
  /** Batch clients of a run (built once per run and warm instance). @default from the deployed registry and `keys` */
  batchModelsFor?: (ctx: RunContext) => RunBatchModels;
}

/** BatchRound's dependencies from its parts: the deployed function's and the emulator's; with `hosted`, batch clients come from that registry. */
export function batchRoundDeps(parts: {
  storage: StorageAdapters;
  keys: KeySource;
  hosted?: () => HostedModels;
  schedule?: PollSchedule;
  deadlineSec?: number;
  logger: Logger;
  metrics: Metrics;
  tracer?: StageTracer;
}): BatchRoundHandlerDeps {
  const { hosted } = parts;
  return {
    ...parts.storage,
    keys: parts.keys,
    schedule: parts.schedule,
    deadlineSec: parts.deadlineSec,
    logger: parts.logger,
    metrics: parts.metrics,
    ...(parts.tracer ? { tracer: parts.tracer } : {}),
    ...(hosted
      ? { batchModelsFor: (ctx: RunContext) => resolveRunBatchModels(ctx.run.spec, ctx.manifest.batch?.models ?? [], hosted, ctx.manifest.batch?.background) }
      : {}),
  };
}

/** The deployed function's: AWS adapters from its configuration, keys from the provider keys secret. */
export function deployedBatchRoundDeps(config: BatchRoundConfig): BatchRoundHandlerDeps {
  const telemetry = lambdaTelemetry('batch-round');
  const { tracer } = telemetry;
  return batchRoundDeps({
    storage: createStorageAdapters(config.storage, { tracer }),
    keys: new SecretsManagerKeySource(createSecretsManagerClient({ region: config.storage.region, endpoint: config.secretsEndpoint, tracer }), {
      secretId: config.keysSecretArn,
    }),
    schedule: config.schedule,
    deadlineSec: config.deadlineSec,
    ...telemetry,
  });
}

export function createHandler(getDeps: () => BatchRoundHandlerDeps): StageHandler<unknown, BatchRoundResult> {
  let state: { contexts: RunContextCache; models: Map<string, RunBatchModels>; hosted: () => HostedModels } | undefined;
  return stageHandler({ failure: 'batch round failed' }, getDeps, async (event: unknown, deps, invocation) => {
    const input = parsePayload(batchRoundInputSchema, event, 'BatchRound input');
    if (!deps.ledger) throw new Error('BatchRound needs a batch ledger (the run table)');
    const ledger = deps.ledger;
    state ??= { contexts: new RunContextCache(deps), models: new Map(), hosted: once(() => new HostedModels(loadDeployedRegistry(), deps.keys)) };
    const { contexts, models, hosted } = state;
    invocation.annotate({ runId: input.runId });
    const ctx = await contexts.get(input.runId);
    let runModels = models.get(input.runId);
    if (!runModels) {
      runModels = deps.batchModelsFor
        ? deps.batchModelsFor(ctx)
        : resolveRunBatchModels(ctx.run.spec, ctx.manifest.batch?.models ?? [], hosted, ctx.manifest.batch?.background);
      models.set(input.runId, runModels);
    }
    const result = await batchRound(
      {
        store: deps.store,
        ledger,
        cache: deps.cache,
        counters: deps.counters,
        // The run's deadline (its --deadline, else the stack's); past 24 h the pauses stretch with it.
        schedule: scheduleForDeadline(input.deadlineSec ?? deps.deadlineSec, deps.schedule ?? DEFAULT_BATCH_POLL_SCHEDULE),
        deadlineSec: input.deadlineSec ?? deps.deadlineSec,
        ...runModels,
        onEvent: (e) => deps.logger.info(`batch ${e.type}`, { ...e }),
      },
      ctx,
      { startedAt: input.startedAt },
    );
    deps.logger.info('batch round', { ...result });
    deps.metrics.addMetric('BatchesSubmitted', MetricUnit.Count, result.submitted);
    deps.metrics.addMetric('BatchAnswersStored', MetricUnit.Count, result.settled);
    return result;
  });
}

/** The stage's entry of app/stages/index.ts. */
export const batchRoundStage = {
  trigger: { state: 'BatchRound', placement: 'phase' },
  function: {
    construct: 'generation',
    id: 'BatchRound',
    dir: 'batch-round',
    description: 'rcb: one round of the batch lane: submits batches, polls each pending one once, ingests those that ended',
  },
  loadConfig,
  deployedDeps: deployedBatchRoundDeps,
  localDeps: (parts) => batchRoundDeps({ storage: parts.storage, keys: parts.keys, hosted: parts.hosted, ...parts.telemetry('batch-round') }),
  createHandler,
  monitoring: { name: 'batch-round' },
} satisfies CloudStage<BatchRoundConfig, BatchRoundHandlerDeps>;
