/**
 * `rcb cloud run --emulate`: the cloud flow on this machine. The state machine the stack
 * deploys is executed with aws-local-stepfunctions; its Lambda task states are bound by
 * state name to the functions' own handlers (createHandler with adapters on the in-process
 * dynalite and s3rver), the EvaluateShard states to the container entry point run as a
 * child process, and the SQS lanes to a simulation that delivers PlanRun's messages to the
 * generate handler in SQS-shaped batches while the workflow waits in WaitForGeneration.
 */
import './promise-polyfill';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Pset } from '../../core/types';
import type { RunSpec, ModelInfo, BlobStore, RunStore } from '../../core/store';
import type { ModelClient } from '../../core/model';
import { runId as computeRunId } from '../../core/ids';
import { uploadPromptTemplate, uploadPsetBundle } from '../../core/cloud/pset-bundle';
import { parsePayload, runWorkflowInputSchema, type RunWorkflowInput } from '../../core/cloud/payloads';
import { envKeySource } from '../../core/keys';
import { HostedModels } from '../models/hosted-models';
import { loadRegistry } from '../models/registry';
import { createStorageAdapters } from '../aws/runtime/cloud-adapters';
import { once } from '../aws/runtime/cloud-config';
import { resolveRunModels, runModelCosts } from '../aws/runtime/run-models';
import * as planRunFn from '../../functions/plan-run/handler';
import * as generateFn from '../../functions/generate/handler';
import * as checkProgressFn from '../../functions/check-progress/handler';
import * as aggregateFn from '../../functions/aggregate/handler';
import * as markFailedFn from '../../functions/mark-failed/handler';
import { STATE_NAMES } from '../../infra/state-names';
import { startLocalAws, type LocalAws } from './local-aws';
import { SimulatedLanes, type LaneStats } from './sqs-lanes';
import { shardContainerHandler, type ShardRunOutcome } from './shard-container';
import { synthesizeWorkflow, type SynthesizedWorkflow } from './workflow-definition';

export interface EmulatedRunRequest {
  pset: Pset;
  /** The prompt template's text (uploaded, as `rcb cloud run` uploads it). */
  templateText: string;
  /** The run spec as a local run builds it; `psetRoot` is replaced by the bundle's key. */
  spec: RunSpec;
  /** Report metadata of each model, by id. */
  models: Record<string, ModelInfo>;
  /** Plan even when the estimate exceeds the budget. */
  force?: boolean;
}

export interface EmulatorOptions {
  /**
   * Deliver every SQS message twice: after the first copy is handled (`true`), or at the
   * same time as it, to a concurrent handler call (`'overlapping'`).
   * @default false
   */
  deliverTwice?: boolean | 'overlapping';
  /** Make the first EvaluateShard container run exit non-zero (SIGTERM), once. @default false */
  failFirstShardOnce?: boolean;
  /** Python interpreter of the container's tests. @default RCB_PYTHON, else python3 */
  python?: string;
  /** Tests at once per container. @default cores / shards in flight, at least 1 */
  jobs?: number;
  /** Run tests without bubblewrap (RCB_SANDBOX=none in the container). @default false */
  unsafeNoSandbox?: boolean;
  /** Pause of WaitForGeneration, ms (the deployed definition waits 30 s). @default 100 */
  generationPollMs?: number;
  /** Hosted models (registry and keys), for specs that name them. @default shipped registry, keys from the environment */
  hosted?: () => HostedModels;
  /** Offline clients by id that override the defaults (tests count calls with these). */
  clients?: Map<string, ModelClient>;
  /** A definition already synthesized (tests reuse one). @default synthesized now */
  workflow?: SynthesizedWorkflow;
  /** Told of each Task state's end (its result, or `{ error }` with the error's name), for progress output. */
  onState?: (state: string, result: unknown) => void;
}

export interface EmulatedRun {
  runId: string;
  input: RunWorkflowInput;
  /** The execution's output, or the error that failed it. */
  output?: unknown;
  error?: { name: string; message: string };
  succeeded: boolean;
  store: RunStore;
  blobs: BlobStore;
  lanes: LaneStats;
  shardRuns: ShardRunOutcome[];
  /** Stops the servers and removes the scratch space. */
  close(): Promise<void>;
}

/** Metrics that are recorded and dropped: EMF lines on stdout would drown the progress. */
class DroppedMetrics extends Metrics {
  override publishStoredMetrics(): this {
    this.clearMetrics();
    return this;
  }
}

const silentLogger = (serviceName: string) => new Logger({ serviceName, logLevel: 'SILENT' });
const metrics = (serviceName: string) => new DroppedMetrics({ namespace: 'rcb-emulated', serviceName });

export async function emulateCloudRun(request: EmulatedRunRequest, options: EmulatorOptions = {}): Promise<EmulatedRun> {
  const workflow = options.workflow ?? synthesizeWorkflow();
  const scratchDir = mkdtempSync(join(tmpdir(), 'rcb-emulate-'));
  let aws: LocalAws | undefined;
  try {
    aws = await startLocalAws({ scratchDir: join(scratchDir, 'functions') });
    return await execute(aws, scratchDir, workflow, request, options);
  } catch (err) {
    await aws?.close();
    rmSync(scratchDir, { recursive: true, force: true });
    throw err;
  }
}

async function execute(
  aws: LocalAws,
  scratchDir: string,
  workflow: SynthesizedWorkflow,
  request: EmulatedRunRequest,
  options: EmulatorOptions,
): Promise<EmulatedRun> {
  const { StateMachine } = require('aws-local-stepfunctions') as typeof import('aws-local-stepfunctions');
  const storage = createStorageAdapters(aws.storage, { doc: aws.doc, s3: aws.s3 });
  const hosted = options.hosted ?? once(() => new HostedModels(loadRegistry(), envKeySource(process.env)));

  // What `rcb cloud run` does before StartExecution: upload the inputs, name the run.
  const psetKey = await uploadPsetBundle(storage.blobs, request.pset);
  await uploadPromptTemplate(storage.blobs, request.templateText);
  const spec: RunSpec = { ...request.spec, psetRoot: psetKey };
  const runId = computeRunId(spec);
  const input = parsePayload(
    runWorkflowInputSchema,
    { runId, spec, models: request.models, ...(request.force ? { force: true } : {}) },
    'run workflow input',
  );

  const generate = generateFn.createHandler(() => ({
    ...storage,
    keys: envKeySource(process.env),
    logger: silentLogger('rcb-generate'),
    metrics: metrics('generate'),
    modelsFor: (ctx) => {
      const models = resolveRunModels(ctx.run.spec, ctx.pset, hosted);
      for (const [id, client] of options.clients ?? []) if (models.clients.has(id)) models.clients.set(id, client);
      return models;
    },
  }));
  const lanes = new SimulatedLanes((event) => generate(event), {
    deliverTwice: options.deliverTwice,
    maxReceiveCount: workflow.maxReceiveCount,
  });

  const planRun = planRunFn.createHandler(() => ({
    ...storage,
    queue: lanes,
    costsFor: (s) => runModelCosts(s, hosted),
    evaluationReady: true,
    logger: silentLogger('rcb-plan-run'),
    metrics: metrics('plan-run'),
  }));
  const checkProgress = checkProgressFn.createHandler(() => ({
    store: storage.store,
    generationTimeoutSec: workflow.generationTimeoutSec ?? 24 * 3600,
    logger: silentLogger('rcb-check-progress'),
    metrics: metrics('check-progress'),
  }));
  const aggregate = aggregateFn.createHandler(() => ({
    ...storage,
    logger: silentLogger('rcb-aggregate'),
    metrics: metrics('aggregate'),
  }));
  const markFailed = markFailedFn.createHandler(() => ({ store: storage.store, logger: silentLogger('rcb-mark-failed') }));

  // Parent of each container run's /scratch; test users (when this runs as root) must traverse it.
  const containerScratch = join(scratchDir, 'containers');
  mkdirSync(containerScratch, { recursive: true });
  chmodSync(scratchDir, 0o755);
  chmodSync(containerScratch, 0o755);
  const maxConcurrency = Number(workflow.definition.States[STATE_NAMES.evaluateShards]?.MaxConcurrency ?? 1) || 1;
  const shardsAtOnce = Math.min(maxConcurrency, Math.max(1, request.pset.papers.length));
  const shardRuns: ShardRunOutcome[] = [];
  const evaluateShard = shardContainerHandler({
    baseEnv: {
      ...aws.childEnv(),
      RCB_PYTHON: options.python ?? (process.env.RCB_PYTHON || 'python3'),
      RCB_JOBS: String(options.jobs ?? Math.max(1, Math.floor(cpus().length / shardsAtOnce))),
      ...(options.unsafeNoSandbox ? { RCB_SANDBOX: 'none' } : {}),
    },
    scratchRoot: containerScratch,
    failFirstRunOnce: options.failFirstShardOnce,
    onExit: (outcome) => shardRuns.push(outcome),
  });

  const note = options.onState ?? (() => undefined);
  const bound = (state: string, fn: (input: any) => Promise<unknown>) => async (stateInput: any): Promise<any> => {
    try {
      const result = await fn(stateInput);
      note(state, result);
      return result;
    } catch (err) {
      note(state, { error: (err as Error).name });
      throw err;
    }
  };
  const handlers = {
    [STATE_NAMES.planRun]: bound(STATE_NAMES.planRun, planRun),
    [STATE_NAMES.checkProgress]: bound(STATE_NAMES.checkProgress, checkProgress),
    [STATE_NAMES.evaluateShard]: bound(STATE_NAMES.evaluateShard, evaluateShard),
    [STATE_NAMES.evaluateShardOnDemand]: bound(STATE_NAMES.evaluateShardOnDemand, evaluateShard),
    [STATE_NAMES.aggregate]: bound(STATE_NAMES.aggregate, aggregate),
    [STATE_NAMES.markRunFailed]: bound(STATE_NAMES.markRunFailed, async (stateInput) => {
      await markFailed(stateInput);
      return null;
    }),
  };
  const machine = new StateMachine(workflow.definition as never, { validationOptions: { checkArn: false } });
  const execution = machine.run(input as unknown as Parameters<typeof machine.run>[0], {
    overrides: {
      taskResourceLocalHandlers: handlers,
      waitTimeOverrides: { [STATE_NAMES.waitForGeneration]: options.generationPollMs ?? 100 },
      // Retries keep their count and order; only the pauses between them go.
      retryIntervalOverrides: Object.fromEntries(statesWithRetry(workflow.definition.States).map((name) => [name, 0])),
    },
  });

  let output: unknown;
  let error: EmulatedRun['error'];
  try {
    output = await execution.result;
  } catch (err) {
    const e = err as Error & { cause?: { name?: string; message?: string } };
    error = { name: e.cause?.name ?? e.name, message: e.cause?.message ?? e.message };
  }
  // Deliveries still in flight (duplicates of settled tasks) finish before the servers stop.
  await lanes.drained().catch(() => undefined);
  return {
    runId,
    input,
    output,
    error,
    succeeded: !error,
    store: storage.store,
    blobs: storage.blobs,
    lanes: lanes.stats,
    shardRuns,
    async close() {
      await aws.close();
      rmSync(scratchDir, { recursive: true, force: true });
    },
  };
}

/** Names of the states with a Retry, those of Map item processors and Parallel branches included. */
export function statesWithRetry(states: Record<string, Record<string, unknown>>): string[] {
  return Object.entries(states).flatMap(([name, state]) => {
    const nested = [state.ItemProcessor, state.Iterator, ...((state.Branches as unknown[]) ?? [])] as Array<{ States?: Record<string, Record<string, unknown>> } | undefined>;
    return [...('Retry' in state ? [name] : []), ...nested.flatMap((n) => (n?.States ? statesWithRetry(n.States) : []))];
  });
}
