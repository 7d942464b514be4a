/**
 * A stage of the cloud run (its Lambda entry point is functions/plan-run/handler.ts):
 * PlanRun (Step Functions task): validate the run spec, write the run and its tasks,
 * refuse a spec whose estimate exceeds the budget (unless forced), enqueue one SQS message
 * per unanswered task on its provider's lane (batch-mode models' tasks are left to the batch
 * lane), and list the shards (papers) to evaluate.
 * A thin adapter over core/cloud/plan-cloud-run.ts.
 *
 * Environment: RCB_TABLE, RCB_BUCKET, RCB_LANE_QUEUES (JSON lane -> queue URL),
 * RCB_EVALUATION_READY ("true" | "false"), RCB_TASK_DEFINITION (the evaluator's task
 * definition revision ARN) and RCB_EVALUATION_IMAGE (its image), which a run pins,
 * RCB_MAX_SHARDS (largest sweep admitted), RCB_GENERATION_TIMEOUT_SEC (default deadline).
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { planCloudRun, type PlanCloudRunDeps } from '../../core/cloud/plan-cloud-run';
import { parsePayload, runWorkflowInputSchema, type PlanRunResult, type RunWorkflowInput, type ShardRef } from '../../core/cloud/payloads';
import type { CostModel } from '../../core/run/generate';
import type { RunSpec } from '../../core/records';
import { createSqsClient } from '../../adapters/aws/clients';
import { HostedModels } from '../../adapters/models/hosted-models';
import { envKeySource } from '../../core/keys';
import { jsonRecordEnv, loadStorageConfig, once, type StorageConfig } from '../../adapters/aws/runtime/cloud-config';
import { createStorageAdapters, type StorageAdapters } from '../../adapters/aws/runtime/cloud-adapters';
import { LaneTaskQueue } from '../../adapters/aws/runtime/lane-task-queue';
import { lambdaTelemetry, stageHandler, type StageHandler, type StageTracer } from '../../adapters/aws/runtime/stage-lifecycle';
import type { TaskQueue } from '../../core/cloud/ports';
import { loadDeployedRegistry, OFFLINE_MODELS, runBatchCosts, runModelCosts, runSlowModels } from '../models';
import type { CloudStage } from './cloud-stage';

export { runWorkflowInputSchema };
export type { RunWorkflowInput, ShardRef, PlanRunResult };

export interface PlanRunConfig {
  storage: StorageConfig;
  /** RCB_LANE_QUEUES: lane name -> queue URL. */
  laneQueues: Record<string, string>;
  /** RCB_EVALUATION_READY: false on a parked stack (no interface endpoints), which refuses runs. */
  evaluationReady: boolean;
  /** RCB_TASK_DEFINITION and RCB_EVALUATION_IMAGE: the deployed evaluator a new run pins. */
  evaluation: { taskDefinitionArn: string; image: string; functions?: Record<string, string> };
  /** RCB_MAX_SHARDS. */
  maxShards?: number;
  /** RCB_GENERATION_TIMEOUT_SEC: the deadline of a run that sets none. */
  defaultDeadlineSec?: number;
}

function positiveIntEnv(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer (got ${JSON.stringify(raw)})`);
  return n;
}

function requiredEnv(env: NodeJS.ProcessEnv, name: string): string {
  const v = env[name];
  if (!v) throw new Error(`${name} is not set: PlanRun pins the evaluator it names`);
  return v;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): PlanRunConfig {
  return {
    storage: loadStorageConfig(env),
    laneQueues: jsonRecordEnv(env, 'RCB_LANE_QUEUES'),
    evaluationReady: env.RCB_EVALUATION_READY !== 'false',
    evaluation: {
      taskDefinitionArn: requiredEnv(env, 'RCB_TASK_DEFINITION'),
      image: requiredEnv(env, 'RCB_EVALUATION_IMAGE'),
      // The function versions this deploy published (infra/rcb-stack.ts): the run's pin records them.
      ...(env.RCB_FUNCTION_VERSIONS ? { functions: jsonRecordEnv(env, 'RCB_FUNCTION_VERSIONS') } : {}),
    },
    maxShards: positiveIntEnv(env, 'RCB_MAX_SHARDS'),
    defaultDeadlineSec: positiveIntEnv(env, 'RCB_GENERATION_TIMEOUT_SEC'),
  };
}

export interface PlanRunHandlerDeps extends Omit<PlanCloudRunDeps, 'costs'> {
  /** Prices of the spec's paid models. */
  costsFor(spec: RunSpec): Map<string, CostModel>;
  /** Batch prices of the run's batch-mode models. @default their interactive prices */
  batchCostsFor?(spec: RunSpec, batchModels: readonly string[]): Map<string, CostModel>;
  /** The spec's slow models, left to the batch lane in background mode. @default none */
  slowModelsFor?(spec: RunSpec): Set<string>;
  evaluationReady: boolean;
  logger: Logger;
  metrics: Metrics;
  tracer?: StageTracer;
}

/** PlanRun's dependencies from its parts: the deployed function's and the emulator's. */
export function planRunDeps(parts: {
  storage: StorageAdapters;
  queue: TaskQueue;
  /** Registry for routing and prices only (PlanRun never calls a model); loaded on first need. */
  hosted: () => HostedModels;
  evaluationReady: boolean;
  evaluation: PlanRunConfig['evaluation'];
  maxShards?: number;
  defaultDeadlineSec?: number;
  logger: Logger;
  metrics: Metrics;
  tracer?: StageTracer;
}): PlanRunHandlerDeps {
  const { storage, hosted } = parts;
  return {
    ...storage,
    queue: parts.queue,
    costsFor: (spec) => runModelCosts(spec, hosted),
    batchCostsFor: (spec, batchModels) => runBatchCosts(spec, batchModels, hosted),
    slowModelsFor: (spec) => runSlowModels(spec, hosted),
    evaluationReady: parts.evaluationReady,
    evaluation: parts.evaluation,
    ...(parts.maxShards ? { maxShards: parts.maxShards } : {}),
    ...(parts.defaultDeadlineSec ? { defaultDeadlineSec: parts.defaultDeadlineSec } : {}),
    logger: parts.logger,
    metrics: parts.metrics,
    ...(parts.tracer ? { tracer: parts.tracer } : {}),
  };
}

/** The deployed function's: AWS adapters from its configuration, the queues of its lanes. */
export function deployedPlanRunDeps(config: PlanRunConfig): PlanRunHandlerDeps {
  // No keys: PlanRun never calls a model. Loaded on first need: a run of offline models only never reads the registry file.
  const hosted = once(() => new HostedModels(loadDeployedRegistry(), envKeySource({})));
  const lanes = Object.keys(config.laneQueues);
  const telemetry = lambdaTelemetry('plan-run');
  const { tracer } = telemetry;
  return planRunDeps({
    storage: createStorageAdapters(config.storage, { tracer }),
    queue: new LaneTaskQueue(createSqsClient({ region: config.storage.region, tracer }), { queueUrls: config.laneQueues, defaultLane: lanes[0] }, (model) =>
      OFFLINE_MODELS.has(model) ? 'offline' : (hosted().entry(model)?.provider ?? 'offline'),
    ),
    hosted,
    evaluationReady: config.evaluationReady,
    evaluation: config.evaluation,
    maxShards: config.maxShards,
    defaultDeadlineSec: config.defaultDeadlineSec,
    ...telemetry,
  });
}

export function createHandler(getDeps: () => PlanRunHandlerDeps): StageHandler<unknown, PlanRunResult> {
  return stageHandler({ failure: 'planning failed' }, getDeps, async (event: unknown, deps, invocation) => {
    const input = parsePayload(runWorkflowInputSchema, event, 'run workflow input');
    invocation.annotate({ runId: input.runId });
    if (!deps.evaluationReady) {
      throw new Error('this stack is parked (interfaceEndpoints=false): evaluation cannot start tasks; redeploy with endpoints to run');
    }
    const batchCosts = input.batch && deps.batchCostsFor?.(input.spec, input.batch.models);
    const slowModels = deps.slowModelsFor?.(input.spec);
    const plan = await planCloudRun(
      { ...deps, costs: deps.costsFor(input.spec), ...(batchCosts ? { batchCosts } : {}), ...(slowModels?.size ? { slowModels } : {}) },
      input,
    );
    deps.logger.info('run planned', {
      taskCount: plan.taskCount,
      enqueued: plan.enqueued,
      batchTasks: plan.batchTasks,
      shards: plan.shardCount,
      taskDefinitionArn: plan.taskDefinitionArn,
      estimatedCostUsd: plan.estimatedCostUsd,
    });
    deps.metrics.addMetric('TasksPlanned', MetricUnit.Count, plan.taskCount);
    deps.metrics.addMetric('TasksEnqueued', MetricUnit.Count, plan.enqueued);
    return plan;
  });
}

/** The stage's entry of app/stages/index.ts. */
export const planRunStage = {
  trigger: { state: 'PlanRun', placement: 'phase' },
  function: {
    construct: 'orchestrator',
    id: 'PlanRunFunction',
    dir: 'plan-run',
    description: 'rcb: validates a run spec, writes its tasks, checks the budget, enqueues generation',
  },
  loadConfig,
  deployedDeps: deployedPlanRunDeps,
  localDeps: (parts) =>
    planRunDeps({
      storage: parts.storage,
      queue: parts.queue,
      hosted: parts.hosted,
      evaluationReady: true,
      evaluation: parts.evaluation(),
      defaultDeadlineSec: parts.generationTimeoutSec,
      ...parts.telemetry('plan-run'),
    }),
  createHandler,
  monitoring: { name: 'plan-run' },
} satisfies CloudStage<PlanRunConfig, PlanRunHandlerDeps>;
