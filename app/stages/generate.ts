/**
 * A stage of the cloud run (its Lambda entry point is functions/generate/handler.ts):
 * Generate (SQS lanes -> Lambda, ReportBatchItemFailures): each task message becomes one
 * completion through core/cloud/generate-task.ts: reserve budget on the run item, call the
 * model with keys from the provider keys secret, store the completion (first write wins),
 * settle the actual cost. Idempotent on the task id: a duplicate delivery does nothing.
 * A duplicate handled while the first copy is still calling the model (on another instance)
 * finds the task's generation claim taken and is reported failed without calling: SQS
 * redelivers it after the visibility timeout, when the completion exists. That is logged
 * at info and counted as Tasks_in_flight_elsewhere, not as MessagesFailed.
 * A record fails (and is redelivered, then dead-lettered) only on an error retrying can
 * fix; a malformed message fails too, so it lands in the DLQ where it can be seen.
 *
 * Environment: RCB_TABLE, RCB_BUCKET, RCB_KEYS_SECRET_ARN (RCB_SECRETS_ENDPOINT, like the
 * storage endpoints, only for the emulator's local servers).
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { GenerationDeadlineError, GenerationInFlightError, generateTask, type GenerateTaskDeps, type GenerateTaskResult } from '../../core/cloud/generate-task';
import { generationMessageSchema, type GenerationMessage } from '../../core/cloud/payloads';
import { parseGenerationMessage } from '../../adapters/aws/messages';
import { RunContextCache, type RunContext } from '../../core/cloud/run-context';
import type { KeySource } from '../../core/keys';
import { createSecretsManagerClient } from '../../adapters/aws/clients';
import { SecretsManagerKeySource } from '../../adapters/aws/secrets-key-source';
import { HostedModels } from '../../adapters/models/hosted-models';
import { loadStorageConfig, once, requiredEnv, type StorageConfig } from '../../adapters/aws/runtime/cloud-config';
import { createStorageAdapters, type StorageAdapters } from '../../adapters/aws/runtime/cloud-adapters';
import { lambdaTelemetry, stageHandler, tracedModelClient, type StageTracer } from '../../adapters/aws/runtime/stage-lifecycle';
import { loadDeployedRegistry, loadRunReplays, resolveRunModels, type RunModels } from '../models';
import type { ModelClient } from '../../core/model';

export { generationMessageSchema };
export type { GenerationMessage };

export interface GenerateConfig {
  storage: StorageConfig;
  /** RCB_KEYS_SECRET_ARN: the provider keys secret. */
  keysSecretArn: string;
  /** RCB_SECRETS_ENDPOINT: a local Secrets Manager (the emulator's); AWS when unset. */
  secretsEndpoint?: string;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): GenerateConfig {
  return { storage: loadStorageConfig(env), keysSecretArn: requiredEnv(env, 'RCB_KEYS_SECRET_ARN'), secretsEndpoint: env.RCB_SECRETS_ENDPOINT || undefined };
}

export interface GenerateHandlerDeps extends StorageAdapters {
  keys: KeySource;
  logger: Logger;
  metrics: Metrics;
  tracer?: StageTracer;
  /** Model clients of a run (built once per run and warm instance). @default from the registry and `keys` */
  modelsFor?: (ctx: RunContext, replays: Map<string, ModelClient>) => RunModels;
}

/**
 * Generate's dependencies from its parts: the deployed function's and the emulator's. With
 * `hosted`, a run's model clients come from that registry; `clients` override offline ones by
 * id (the emulator's tests count calls with them).
 */
export function generateDeps(parts: {
  storage: StorageAdapters;
  keys: KeySource;
  hosted?: () => HostedModels;
  clients?: ReadonlyMap<string, ModelClient>;
  logger: Logger;
  metrics: Metrics;
  tracer?: StageTracer;
}): GenerateHandlerDeps {
  const { hosted, clients } = parts;
  return {
    ...parts.storage,
    keys: parts.keys,
    logger: parts.logger,
    metrics: parts.metrics,
    ...(parts.tracer ? { tracer: parts.tracer } : {}),
    ...(hosted
      ? {
          modelsFor: (ctx: RunContext, replays: Map<string, ModelClient>) => {
            const models = resolveRunModels(ctx.run.spec, ctx.pset, hosted, replays);
            for (const [id, client] of clients ?? []) if (models.clients.has(id)) models.clients.set(id, client);
            return models;
          },
        }
      : {}),
  };
}

/** The deployed function's: AWS adapters from its configuration, keys from the provider keys secret. */
export function deployedGenerateDeps(config: GenerateConfig): GenerateHandlerDeps {
  const telemetry = lambdaTelemetry('generate');
  const { tracer } = telemetry;
  return generateDeps({
    storage: createStorageAdapters(config.storage, { tracer }),
    keys: new SecretsManagerKeySource(createSecretsManagerClient({ region: config.storage.region, endpoint: config.secretsEndpoint, tracer }), {
      secretId: config.keysSecretArn,
    }),
    ...telemetry,
  });
}

/**
 * Added to the invocation's remaining time to make a generation claim's lease: the claim
 * outlasts anything this invocation can still do (clock skew between instances included),
 * and expires long before the lane's visibility timeout (six times the function timeout)
 * brings the message back.
 */
export const CLAIM_LEASE_MARGIN_MS = 30_000;

/**
 * Time kept back at the end of an invocation to settle a stopped call: 10 s, or a fifth of a
 * short invocation's remaining time.
 */
export function deadlineMarginMs(remainingMs: number): number {
  return Math.min(10_000, remainingMs / 5);
}

export function createHandler(getDeps: () => GenerateHandlerDeps): (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse> {
  let state: { contexts: RunContextCache; models: Map<string, RunModels>; hosted: () => HostedModels } | undefined;
  return stageHandler({ failure: 'generation batch failed' }, getDeps, async (event: SQSEvent, deps, _invocation, context) => {
    state ??= {
      contexts: new RunContextCache(deps),
      models: new Map(),
      hosted: once(() => new HostedModels(loadDeployedRegistry(), deps.keys)),
    };
    const { contexts, models, hosted } = state;
    const processor = new BatchProcessor(EventType.SQS);

    const recordHandler = async (record: SQSRecord): Promise<GenerateTaskResult> => {
      const message = parseGenerationMessage(record.body);
      const ctx = await contexts.get(message.runId);
      let runModels = models.get(message.runId);
      if (!runModels) {
        // Replayed models answer from the file uploaded with the run, fetched once per instance.
        const replays = await loadRunReplays(deps.blobs, ctx.run.spec, deps.scratchDir);
        runModels = deps.modelsFor ? deps.modelsFor(ctx, replays) : resolveRunModels(ctx.run.spec, ctx.pset, hosted, replays);
        if (deps.tracer?.isTracingEnabled()) runModels = tracedRunModels(runModels, deps.tracer, hosted);
        models.set(message.runId, runModels);
      }
      // No model call of this handling outlives the invocation (Lambda ends it at the timeout):
      // it is stopped DEADLINE_MARGIN_MS before, while there is time to settle its reservation
      // and hand the message back.
      const remainingMs = context?.getRemainingTimeInMillis?.();
      const deadline = new AbortController();
      const timer = remainingMs === undefined ? undefined : setTimeout(() => deadline.abort(), Math.max(0, remainingMs - deadlineMarginMs(remainingMs)));
      const taskDeps: GenerateTaskDeps = {
        store: deps.store,
        cache: deps.cache,
        ...runModels,
        signal: deadline.signal,
        counters: deps.counters,
        ...(remainingMs === undefined ? {} : { claimLeaseMs: remainingMs + CLAIM_LEASE_MARGIN_MS }),
      };
      const result = await generateTask(taskDeps, ctx, message).finally(() => clearTimeout(timer));
      deps.logger.info('task settled', { runId: message.runId, taskId: message.taskId, model: result.model, outcome: result.outcome, costUsd: result.costUsd });
      deps.metrics.addMetric(`Tasks_${result.outcome}`, MetricUnit.Count, 1);
      if (result.costUsd > 0) deps.metrics.addMetric('SpendUsd', MetricUnit.NoUnit, result.costUsd);
      return result;
    };

    // In order, not in parallel: a task delivered twice in one batch then finds its own
    // completion instead of racing to a second paid call. A batch whose every record
    // failed is reported like any other, not thrown: the failed ids are what SQS redelivers.
    const response = await processPartialResponse(event, recordHandler, processor, {
      context: context as Context,
      processInParallel: false,
      throwOnFullBatchFailure: false,
    });
    const inFlight = processor.errors.filter((err) => err instanceof GenerationInFlightError);
    const stopped = processor.errors.filter((err) => err instanceof GenerationDeadlineError);
    const failed = processor.errors.filter((err) => !(err instanceof GenerationInFlightError) && !(err instanceof GenerationDeadlineError));
    stopped.forEach((err) =>
      deps.logger.warn('model call stopped at the invocation deadline; SQS will redeliver it', { taskId: (err as GenerationDeadlineError).taskId }),
    );
    if (stopped.length) deps.metrics.addMetric('Tasks_stopped_at_deadline', MetricUnit.Count, stopped.length);
    inFlight.forEach((err) => deps.logger.info('task in flight elsewhere; SQS will redeliver this copy', { taskId: (err as GenerationInFlightError).taskId }));
    if (inFlight.length) deps.metrics.addMetric('Tasks_in_flight_elsewhere', MetricUnit.Count, inFlight.length);
    failed.forEach((err) => deps.logger.error('message failed; SQS will redeliver it', err));
    if (failed.length) deps.metrics.addMetric('MessagesFailed', MetricUnit.Count, failed.length);
    return response;
  });
}

/** The run's model clients with each call traced (a subsegment annotated with provider and model); offline ones as they are. */
function tracedRunModels(runModels: RunModels, tracer: StageTracer, hosted: () => HostedModels): RunModels {
  const clients = new Map<string, ModelClient>();
  for (const [id, client] of runModels.clients) {
    clients.set(id, client.offline ? client : tracedModelClient(client, tracer, hosted().entry(id)?.provider ?? 'unregistered'));
  }
  return { ...runModels, clients };
}
