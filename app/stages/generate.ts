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
import {
  DEFAULT_CLAIM_LEASE_MS,
  GenerationDeadlineError,
  GenerationInFlightError,
  generateTask,
  type GenerateTaskDeps,
  type GenerateTaskResult,
} from '../../core/cloud/generate-task';
import { generationMessageSchema, type GenerationMessage } from '../../core/cloud/payloads';
import { parseGenerationMessage } from '../../adapters/aws/messages';
import { RunContextCache, type RunContext } from '../../core/cloud/run-context';
import type { KeySource } from '../../core/keys';
import { createSecretsManagerClient, createSqsClient } from '../../adapters/aws/clients';
import { SecretsManagerKeySource } from '../../adapters/aws/secrets-key-source';
import { HostedModels } from '../../adapters/models/hosted-models';
import { loadStorageConfig, once, parseJsonConfig, requiredEnv, type StorageConfig } from '../../adapters/aws/runtime/cloud-config';
import { createStorageAdapters, type StorageAdapters } from '../../adapters/aws/runtime/cloud-adapters';
import { lambdaTelemetry, stageHandler, tracedModelClient, type StageTracer } from '../../adapters/aws/runtime/stage-lifecycle';
import { loadDeployedRegistry, loadRunReplays, resolveRunModels, type RunModels } from '../models';
import type { ModelClient } from '../../core/model';
import { SharedLaneThrottle, ThrottledModelClient, type LaneThrottle } from '../../core/lane-throttle';
import { type Redelivery, type ReturnedRecord, redeliveryDelaySec } from '../../core/cloud/redelivery';
import { SqsRedelivery } from '../../adapters/aws/sqs-redelivery';
import { z } from 'zod';
import type { CloudStage } from './cloud-stage';

export { generationMessageSchema };
export type { GenerationMessage };

/**
 * The lanes whose queues this generator drains (RCB_LANES, JSON, written by the stack): each
 * record's lane is the one of its event source queue, and every model call of it holds a slot
 * of that lane's shared throttle, at most `maxConcurrency` at once and fewer after 429s.
 */
export const laneThrottleConfigSchema = z.array(
  z.object({ name: z.string().min(1), queueArn: z.string().min(1), maxConcurrency: z.number().int().positive() }),
);
export type LaneThrottleConfig = z.infer<typeof laneThrottleConfigSchema>[number];

/** RCB_LANES parsed, or none when unset (no shared throttle: each call goes straight to the provider). */
export function parseLaneThrottleConfig(raw: string | undefined): LaneThrottleConfig[] | undefined {
  return raw ? parseJsonConfig('RCB_LANES', raw, laneThrottleConfigSchema) : undefined;
}

export interface GenerateConfig {
  storage: StorageConfig;
  /** RCB_LANES: the lanes' queues and concurrency, for the shared lane throttles. */
  lanes?: LaneThrottleConfig[];
  /** RCB_KEYS_SECRET_ARN: the provider keys secret. */
  keysSecretArn: string;
  /** RCB_SECRETS_ENDPOINT: a local Secrets Manager (the emulator's); AWS when unset. */
  secretsEndpoint?: string;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): GenerateConfig {
  const lanes = parseLaneThrottleConfig(env.RCB_LANES);
  return {
    storage: loadStorageConfig(env),
    keysSecretArn: requiredEnv(env, 'RCB_KEYS_SECRET_ARN'),
    secretsEndpoint: env.RCB_SECRETS_ENDPOINT || undefined,
    ...(lanes ? { lanes } : {}),
  };
}

export interface GenerateHandlerDeps extends StorageAdapters {
  keys: KeySource;
  logger: Logger;
  metrics: Metrics;
  tracer?: StageTracer;
  /** Model clients of a run (built once per run and warm instance). @default from the registry and `keys` */
  modelsFor?: (ctx: RunContext, replays: Map<string, ModelClient>) => RunModels;
  /** The lanes this generator drains, for their shared throttles (over `laneStates`). @default none: no shared throttle */
  lanes?: LaneThrottleConfig[];
  /** Brings handed-back records round after a short backoff. @default none: SQS's full visibility timeout */
  redelivery?: Redelivery;
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
  lanes?: LaneThrottleConfig[];
  redelivery?: Redelivery;
}): GenerateHandlerDeps {
  const { hosted, clients } = parts;
  return {
    ...parts.storage,
    ...(parts.lanes ? { lanes: parts.lanes } : {}),
    ...(parts.redelivery ? { redelivery: parts.redelivery } : {}),
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
    ...(config.lanes ? { lanes: config.lanes } : {}),
    redelivery: new SqsRedelivery(createSqsClient({ region: config.storage.region, tracer })),
  });
}

/**
 * The shared throttle of each lane this generator drains, by its queue's ARN (an SQS
 * record's eventSourceARN), over the table's lane items; empty without lanes or a store.
 */
export function laneThrottles(deps: Pick<GenerateHandlerDeps, 'lanes' | 'laneStates'>): Map<string, LaneThrottle> {
  const out = new Map<string, LaneThrottle>();
  if (!deps.lanes || !deps.laneStates) return out;
  for (const lane of deps.lanes) out.set(lane.queueArn, new SharedLaneThrottle(lane.name, { max: lane.maxConcurrency }, deps.laneStates));
  return out;
}

/** The run's clients with every paid one holding a slot of `throttle` per call (offline models need none). */
export function throttledClients(clients: ReadonlyMap<string, ModelClient>, throttle: LaneThrottle, leaseMs: number): Map<string, ModelClient> {
  return new Map([...clients].map(([id, c]) => [id, c.offline ? c : new ThrottledModelClient(c, throttle, { leaseMs })]));
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
  let state: { contexts: RunContextCache; models: Map<string, RunModels>; hosted: () => HostedModels; throttles: Map<string, LaneThrottle> } | undefined;
  return stageHandler({ failure: 'generation batch failed' }, getDeps, async (event: SQSEvent, deps, _invocation, context) => {
    state ??= {
      contexts: new RunContextCache(deps),
      models: new Map(),
      hosted: once(() => new HostedModels(loadDeployedRegistry(), deps.keys)),
      throttles: laneThrottles(deps),
    };
    const { contexts, models, hosted, throttles } = state;
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
      // Every paid call holds a slot of its lane's shared throttle (all instances of the lane
      // count against one limit, cut by 429s), leased for as long as this invocation can run.
      const throttle = throttles.get(record.eventSourceARN);
      const leaseMs = (remainingMs ?? DEFAULT_CLAIM_LEASE_MS) + CLAIM_LEASE_MARGIN_MS;
      const taskDeps: GenerateTaskDeps = {
        store: deps.store,
        cache: deps.cache,
        ...runModels,
        ...(throttle ? { clients: throttledClients(runModels.clients, throttle, leaseMs) } : {}),
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
    if (deps.redelivery) await handBack(deps.redelivery, deps.logger, processor);
    return response;
  });
}

/**
 * Hides each handed-back record for a backoff instead of the lane's whole visibility timeout
 * (docs/cloud.md "Redelivery backoff"). A copy whose task is in flight elsewhere waits out
 * the longest claim any invocation can hold, by when the completion is stored or the claim
 * lapsed. A record whose delay cannot be set keeps the full timeout (a warning, not a failure).
 */
async function handBack(redelivery: Redelivery, logger: Logger, processor: BatchProcessor): Promise<void> {
  const records = processor.failureMessages as SQSRecord[];
  const returned: ReturnedRecord[] = records.map((record, i) => ({
    queueArn: record.eventSourceARN,
    receiptHandle: record.receiptHandle,
    delaySec:
      processor.errors[i] instanceof GenerationInFlightError
        ? Math.ceil(DEFAULT_CLAIM_LEASE_MS / 1000)
        : redeliveryDelaySec(Number(record.attributes?.ApproximateReceiveCount ?? 1)),
  }));
  if (!returned.length) return;
  const unchanged = await redelivery.returnAfter(returned);
  for (const u of unchanged) logger.warn("could not shorten a handed-back record's visibility; it returns after the lane's timeout", { reason: u.reason });
}

/** The run's model clients with each call traced (a subsegment annotated with provider and model); offline ones as they are. */
function tracedRunModels(runModels: RunModels, tracer: StageTracer, hosted: () => HostedModels): RunModels {
  const clients = new Map<string, ModelClient>();
  for (const [id, client] of runModels.clients) {
    clients.set(id, client.offline ? client : tracedModelClient(client, tracer, hosted().entry(id)?.provider ?? 'unregistered'));
  }
  return { ...runModels, clients };
}

/** The stage's entry of app/stages/index.ts: the consumer of the generation lanes' queues. */
export const generateStage = {
  trigger: { queues: 'lanes' },
  function: {
    construct: 'generation',
    id: 'Generator',
    dir: 'generate',
    description: 'rcb: calls one model per task message and stores the completion (SQS lanes)',
  },
  loadConfig,
  deployedDeps: deployedGenerateDeps,
  localDeps: (parts) =>
    generateDeps({ storage: parts.storage, keys: parts.keys, hosted: parts.hosted, clients: parts.clients, ...parts.telemetry('generate') }),
  createHandler,
  monitoring: { name: 'generate' },
} satisfies CloudStage<GenerateConfig, GenerateHandlerDeps>;
