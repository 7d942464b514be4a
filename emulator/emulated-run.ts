/**
 * `rcb cloud run --emulate`: the cloud flow on this machine. The state machine the stack
 * deploys is executed with aws-local-stepfunctions; its Lambda task states are bound by
 * state name to the functions as deployed: each function's esbuild bundle from the
 * synthesized cloud assembly, staged alone and run in its own process with the template's
 * environment (deployed-functions.ts), against dynalite and s3rver and a local SQS and
 * Secrets Manager (local-aws-api.ts). The EvaluateShard states run the image's command as
 * a child process in the image's /app as the Dockerfile lays it out (container-app.ts), and the SQS lanes are a simulation that delivers PlanRun's
 * messages to the generator in SQS-shaped batches while the workflow waits.
 *
 * `functions: 'source'` binds the states to the handlers' createHandler in this process
 * instead, so that tests can hand in model clients (counting calls, slowing them down);
 * it cannot see what the bundles lack, so the CLI never uses it.
 */
import './promise-polyfill';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { BlobStore, RunStore } from '../core/store';
import type { RunSpec } from '../core/records';
import type { ModelClient } from '../core/model';
import { uploadRunInputs, type CloudRunInputs } from '../app/cloud-run';
import type { RunWorkflowInput } from '../core/cloud/payloads';
import { envKeySource } from '../core/keys';
import { HostedModels } from '../adapters/models/hosted-models';
import { loadRegistry } from '../adapters/models/registry';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { createStorageAdapters, type StorageAdapters } from '../adapters/aws/runtime/cloud-adapters';
import { once } from '../adapters/aws/runtime/cloud-config';
import { isOfflineSpec } from '../app/models';
import { keyEnvFor } from '../adapters/models/create-model-client';
import type { GenerationMessage } from '../core/cloud/payloads';
import type { RunCounters } from '../core/cloud/ports';
import { CONTEXT_KEYS } from '../infra/config';
import { LOCAL_ACCOUNT, startLocalAwsApi } from './local-aws-api';
import { deployedFunctions, functionsByState, FunctionProcesses, queueConsumers, resolveValue, type TokenValues } from './deployed-functions';
import { CLOUD_STAGES, stateOf, type LocalStageParts, type StageTable } from '../app/stages';
import { queueConsumer, type StageEntryHandler } from '../app/stages/cloud-stage';
import { STATE_NAMES } from '../infra/state-names';
import { startLocalAws, type LocalAws } from './local-aws';
import type { MeteredUsage } from './usage-meter';
import { SimulatedLanes, type LaneStats } from './sqs-lanes';
import { shardContainerHandler, type ShardRunOutcome } from './shard-container';
import { containerApp } from './container-app';
import { startContainerMetadata } from './container-metadata';
import { type CfnTemplate, qualifiedFunction, type SynthesizedWorkflow, synthesizeWorkflow, withStepFunctionsTaskTimeouts } from './workflow-definition';
import { EmulatorState } from './emulator-state';
import { startOrFollow, type Attempt, type StartOrFollowOptions } from '../core/cloud/execution-attempts';
import { retryableFailedTasks } from '../core/cloud/failed-tasks';
import { runDistributedMap, withDistributedMapsAsTasks, type DistributedMapRun } from './distributed-map';
import { RUN_ENDED_EVENT, type EventPublisher, type RunEndedDetail } from '../core/cloud/run-events';

/** What an emulated run is started with: what `rcb cloud run` uploads (app/cloud-run.ts). */
export type EmulatedRunRequest = CloudRunInputs & {
  /**
   * Start this workflow input instead of the one built from the inputs: a schedule's stored
   * target input, fired (emulator/emulated-schedules.ts). Refused unless it names the run the
   * inputs upload. @default the built input
   */
  startInput?: RunWorkflowInput;
};

export interface EmulatorOptions {
  /** Count DynamoDB and S3 requests and capacity units as AWS bills them (EmulatedRun.usage). @default false */
  meterUsage?: boolean;
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
  /** Pause of WaitForBatches, ms (the deployed round asks for 60 s and more). @default generationPollMs */
  batchPollMs?: number;
  /** Pause of WaitForGeneration, ms (the deployed definition waits 30 s). @default 100 */
  generationPollMs?: number;
  /**
   * How the Lambda states run: `bundles`, each function's deployed bundle in its own
   * process; `source`, the handlers in this process (for `hosted` and `clients`).
   * @default 'bundles'
   */
  functions?: 'bundles' | 'source';
  /**
   * A models file merged over the shipped registry: synthesized into the PlanRun and
   * Generate bundles (`rcb:modelsFile`), as a deployment would carry it. @default none
   */
  modelsFile?: string;
  /** Provider keys the emulated secret holds, by variable name. @default the spec's models' key variables from this environment */
  keys?: Record<string, string>;
  /** Hosted models (registry and keys), for specs that name them (`functions: 'source'` only). @default shipped registry, keys from the environment */
  hosted?: () => HostedModels;
  /** Offline clients by id that override the defaults (tests count calls with these; `functions: 'source'` only). */
  clients?: Map<string, ModelClient>;
  /** A definition already synthesized (tests reuse one; with `deployment` for bundles). @default synthesized now */
  workflow?: SynthesizedWorkflow;
  /** Folder of the cached image layouts, by digest. @default defaultLayoutCache() (~/.cache/rcb/container-app) */
  containerAppCache?: string;
  /**
   * Folder that keeps the table, the bucket and the executions' records between commands
   * (emulator-state.ts); a run whose latest execution there failed starts its next attempt.
   * @default none: everything goes with close()
   */
  stateDir?: string;
  /**
   * The cloud stages: synthesized into the stack, and (with `functions: 'source'`) bound in
   * this process by their entries. Bundles run only the shipped stages' handlers.
   * @default CLOUD_STAGES (app/stages/index.ts)
   */
  stages?: StageTable;
  /** Told of each Task state's end (its result, or `{ error }` with the error's name), for progress output. */
  onState?: (state: string, result: unknown) => void;
  /** Told of each shard container run's end, as it ends (tests order it against generation). */
  onShardExit?: (outcome: ShardRunOutcome) => void;
}

/** Faults of one execution. */
export interface ExecutionFaults {
  /** Every container run of these shards stops with SIGTERM (a shard that cannot finish): the paper, and the shard as JSON (paper, model, slice). */
  failShard?: (paper: string, shardRef?: string) => boolean;
  /**
   * Lambda task states throttled: the first N invocations of each named state fail with
   * Lambda.TooManyRequestsException before reaching the function (the definition's Retry
   * must absorb them).
   */
  throttle?: Record<string, number>;
  /**
   * Generation messages of these tasks fail every delivery (their invocation crashes for
   * them), so SQS redelivers them up to maxReceiveCount and dead-letters them.
   */
  poisonTask?: (taskId: string) => boolean;
  /**
   * A new image deployed mid-run: once this many shard container runs of the execution have
   * ended, the emulator registers a new task definition revision (and image) and deploys it:
   * the deployment's PlanRun pins it for new runs from then on (with the bundles, the
   * functions whose environment names the task definition get the new one, and their next
   * invocations run in fresh instances, as after UpdateFunctionConfiguration). Both
   * revisions stay ACTIVE, as the retained task definitions do. Every revision runs the
   * same emulated image (the /app of this checkout): what the fault shows is which revision
   * each RunTask names.
   */
  deployImageAfterShards?: number;
}

/** The faults of the execution under way, read by the bindings at each call. */
interface LiveFaults {
  faults: ExecutionFaults;
  /** Throttles injected so far, by state. */
  throttled: Record<string, number>;
  /** Shard container runs before this execution (faults count this execution's). */
  shardRunsBefore: number;
}

/** The lanes' consumer with the poisoned tasks' records failed, as a crashed invocation returns them. */
function withPoison(live: LiveFaults, consume: (event: SQSEvent) => Promise<SQSBatchResponse>): (event: SQSEvent) => Promise<SQSBatchResponse> {
  return async (event) => {
    const poison = live.faults.poisonTask;
    if (!poison) return consume(event);
    const bad = event.Records.filter((r) => poison((JSON.parse(r.body) as GenerationMessage).taskId));
    const good = event.Records.filter((r) => !bad.includes(r));
    const result = good.length ? await consume({ ...event, Records: good }) : { batchItemFailures: [] };
    return { batchItemFailures: [...(result?.batchItemFailures ?? []), ...bad.map((r) => ({ itemIdentifier: r.messageId }))] };
  };
}

export interface EmulatedRun {
  runId: string;
  input: RunWorkflowInput;
  /**
   * The execution of this outcome: its name (`<runId>`, `<runId>-2`, ...), and whether it was
   * started (false: the run's latest execution, kept in the state folder, had succeeded, and
   * this outcome is what it stored).
   */
  execution: Attempt;
  /** The execution's output, or the error that failed it. */
  output?: unknown;
  error?: { name: string; message: string };
  succeeded: boolean;
  store: RunStore;
  /** The run item's progress counters (the same table). */
  counters?: RunCounters;
  blobs: BlobStore;
  lanes: LaneStats;
  shardRuns: ShardRunOutcome[];
  /** The image's /app every container run started in (container-app.ts). */
  containerApp: string;
  /** Invocations of each deployed function, by logical id (`functions: 'bundles'`). */
  invocations: Record<string, number>;
  /** What the run asked of DynamoDB and S3 (with `meterUsage`), the inputs' upload included. */
  usage?: MeteredUsage;
  /** Each deployed function's environment now, by logical id, a deploy's changes included (`functions: 'bundles'`). */
  environments: Record<string, Readonly<Record<string, string>>>;
  /** Each Distributed Map Run of this execution (items, children succeeded and failed, peak concurrency). */
  mapRuns: DistributedMapRun[];
  /**
   * The execution's own history as aws-local-stepfunctions logs it (its states and its
   * Parallel branches' states; a Distributed Map's children have histories of their own).
   */
  history: ExecutionHistory;
  /** Lambda.TooManyRequestsException injected, by state (ExecutionFaults.throttle). */
  throttled: Record<string, number>;
  /** The emulated evaluator deployment: every registered task definition revision, and the one deployed now. */
  evaluator: EmulatedEvaluator;
  /** The run-ended events this execution's stages sent (docs/cloud.md#run-events): one when it ended. */
  events: RunEndedDetail[];
  /**
   * Starts the same run again, as `rcb cloud run` does after a failed execution: a new
   * execution of the same input on the same tables, bucket and functions. Resolves with
   * that execution's outcome (lanes and shard runs counted since the first).
   */
  runAgain(faults?: ExecutionFaults): Promise<EmulatedRun>;
  /** Stops the servers and removes the scratch space. */
  close(): Promise<void>;
}

/** An execution's history: its events, by type, and how often each state was entered. */
export interface ExecutionHistory {
  events: number;
  byType: Record<string, number>;
  entered: Record<string, number>;
}

/** Counts an execution's events as its logger yields them (its queue would otherwise keep every one). */
async function countHistory(events: AsyncIterable<{ type: string; state?: { name: string } }>, history: ExecutionHistory): Promise<void> {
  for await (const event of events) {
    history.events++;
    history.byType[event.type] = (history.byType[event.type] ?? 0) + 1;
    if (event.type === 'StateEntered' && event.state) history.entered[event.state.name] = (history.entered[event.state.name] ?? 0) + 1;
  }
}

/** The emulated ECS task definition family of the evaluator: its registered revisions and the deployed one. */
export interface EmulatedEvaluator {
  revisions: Array<{ taskDefinitionArn: string; image: string }>;
  /** What the deployment's PlanRun pins for a new run (RCB_TASK_DEFINITION, RCB_EVALUATION_IMAGE). */
  deployed: { taskDefinitionArn: string; image: string };
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

export async function emulateCloudRun(request: EmulatedRunRequest, options: EmulatorOptions = {}, faults: ExecutionFaults = {}): Promise<EmulatedRun> {
  const mode = options.functions ?? 'bundles';
  if (mode === 'bundles' && (options.clients || options.hosted)) {
    throw new Error(
      "emulator: model clients and hosted models can be handed in only with functions: 'source'; deployed bundles build their own from the registry they carry",
    );
  }
  const state = EmulatorState.open(options.stateDir);
  const scratchDir = mkdtempSync(join(tmpdir(), 'rcb-emulate-'));
  // Run last by closeAll (closers run in reverse): the state is released once the servers have stopped.
  const closers: Array<() => Promise<void>> = [async () => state.close()];
  const closeAll = async (): Promise<void> => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
    rmSync(scratchDir, { recursive: true, force: true });
  };
  try {
    const keep = state.dynamoDir && state.s3Dir ? { dynamoDir: state.dynamoDir, s3Dir: state.s3Dir } : undefined;
    const aws = await startLocalAws({ scratchDir: join(scratchDir, 'functions'), keep, meter: options.meterUsage });
    closers.push(() => aws.close());
    const storage = createStorageAdapters(aws.storage, { doc: aws.doc, s3: aws.s3 });
    const built = await uploadRunInputs(storage.blobs, request);
    if (request.startInput && request.startInput.runId !== built.runId) {
      throw new Error(`emulator: the input to start names run ${request.startInput.runId}; its inputs upload run ${built.runId}`);
    }
    const { runId } = built;
    const input = request.startInput ?? built.input;
    const first = await startOrFollow(state, runId, restartWithFailures(storage.store, runId));
    // The run's latest execution succeeded (a state folder kept it): nothing to run again.
    if (!first.started) return await followed(state, storage, runId, input, first, closeAll);
    const workflow =
      options.workflow && (mode === 'source' || options.workflow.deployment)
        ? options.workflow
        : await synthesizeWorkflow({
            bundle: mode === 'bundles',
            outdir: join(scratchDir, 'cdk.out'),
            context: options.modelsFile ? { [CONTEXT_KEYS.modelsFile]: options.modelsFile } : {},
            ...(options.stages ? { stages: options.stages } : {}),
          });
    return await execute({ aws, storage, state, scratchDir, workflow, request, runId, input, options, closers, closeAll }, first, faults);
  } catch (err) {
    await closeAll();
    throw err;
  }
}

/** As `rcb cloud run`: a succeeded run with failed tasks under their cap starts again (core/cloud/failed-tasks.ts). */
function restartWithFailures(store: RunStore, runId: string): StartOrFollowOptions {
  return { restartSucceeded: async () => (await retryableFailedTasks(store, runId)).length > 0 };
}

/** What `rcb cloud run` does before StartExecution: upload the inputs, name the run. */
/** The outcome of a run whose latest execution had already succeeded: what is stored, nothing run. */
async function followed(
  state: EmulatorState,
  storage: StorageAdapters,
  runId: string,
  input: RunWorkflowInput,
  attempt: Attempt,
  closeAll: () => Promise<void>,
): Promise<EmulatedRun> {
  const execution = await state.describe(attempt.name);
  const run: EmulatedRun = {
    runId,
    input,
    execution: attempt,
    succeeded: execution?.status === 'SUCCEEDED',
    ...(execution?.error ? { error: { name: execution.error, message: execution.cause ?? '' } } : {}),
    store: storage.store,
    counters: storage.counters,
    blobs: storage.blobs,
    lanes: { sent: 0, delivered: 0, failedRecords: 0, deadLettered: [] },
    shardRuns: [],
    containerApp: '',
    invocations: {},
    environments: {},
    mapRuns: [],
    history: { events: 0, byType: {}, entered: {} },
    throttled: {},
    evaluator: { revisions: [], deployed: { taskDefinitionArn: '', image: '' } },
    events: [],
    runAgain: async () => run,
    close: closeAll,
  };
  return run;
}

/**
 * The Lambda states and the lanes' consumer, bound to code. With bundles, every Lambda task
 * state of the synthesized definition is bound to the function it invokes (functionsByState),
 * so a new stage needs no edit here; with sources, every stage of the stage table
 * (app/stages/index.ts, or EmulatorOptions.stages) is bound by its entry.
 */
interface Bindings {
  /** Handler of each Lambda task state, by state name. */
  states: Record<string, (input: unknown) => Promise<unknown>>;
  lanes: SimulatedLanes;
  invocations(): Record<string, number>;
  environments(): Record<string, Readonly<Record<string, string>>>;
  /** A deploy of this evaluator revision: what the deployment's PlanRun pins for new runs from now on. */
  deploy(revision: EmulatedEvaluator['deployed']): void;
  /** The run-ended events the stages sent, in order (the bundles' through the local PutEvents). */
  events: RunEndedDetail[];
}

/** The emulated evaluator deployment a source-bound PlanRun pins (bundles read the template's RCB_TASK_DEFINITION): revision 1. */
function emulatedEvaluator(workflow: SynthesizedWorkflow): EmulatedEvaluator {
  const digest = workflow.imageContext?.digest ?? 'unknown';
  const first = { taskDefinitionArn: `${TASK_DEFINITION_FAMILY}:1`, image: `rcb-evaluation:${digest.slice(0, 12)}` };
  return { revisions: [first], deployed: first };
}

const TASK_DEFINITION_FAMILY = 'arn:aws:ecs:us-east-1:000000000000:task-definition/rcb-evaluation';

/** A deploy: a new revision of the family, with a new image, registered and deployed. */
function deployNewRevision(evaluator: EmulatedEvaluator): void {
  const n = evaluator.revisions.length + 1;
  const next = { taskDefinitionArn: `${TASK_DEFINITION_FAMILY}:${n}`, image: `${evaluator.deployed.image.split(':')[0]}:deploy-${n}` };
  evaluator.revisions.push(next);
  evaluator.deployed = next;
}

/** Bindings to the handlers in this process, with the emulator's adapters handed in. */
function sourceBindings(
  storage: StorageAdapters,
  workflow: SynthesizedWorkflow,
  options: EmulatorOptions,
  live: LiveFaults,
  evaluator: EmulatedEvaluator,
): Bindings {
  const hosted =
    options.hosted ?? once(() => new HostedModels(loadRegistry(options.modelsFile ? { userFile: options.modelsFile } : {}), envKeySource(process.env)));
  const stages: StageTable = options.stages ?? CLOUD_STAGES;
  // Each stage's handler over its own local dependency builder (app/stages/*), called at each
  // invocation; the parts are complete before any stage runs (the lanes need two of the handlers).
  let parts: LocalStageParts | undefined;
  const handlerOf = (name: string): StageEntryHandler => stages[name].createHandler(() => stages[name].localDeps(parts!));
  const generate = handlerOf(queueConsumer(stages, 'lanes'));
  const deadLetter = handlerOf(queueConsumer(stages, 'dead-letters'));
  const lanes = new SimulatedLanes(
    withPoison(live, (event) => generate(event) as Promise<SQSBatchResponse>),
    {
      deliverTwice: options.deliverTwice,
      maxReceiveCount: workflow.maxReceiveCount,
      deadLetterHandler: (event) => deadLetter(event) as Promise<SQSBatchResponse>,
    },
  );
  // The run-ended event, recorded where the deployed stages would put it on the bus.
  const sent: RunEndedDetail[] = [];
  const events: EventPublisher = { publishRunEnded: async (detail) => void sent.push(detail) };
  parts = {
    events,
    storage,
    keys: envKeySource(process.env),
    hosted,
    clients: options.clients,
    queue: lanes,
    // Read at each invocation: a deploy mid-run changes what a new run pins, not this one.
    evaluation: () => ({ ...evaluator.deployed }),
    generationTimeoutSec: workflow.generationTimeoutSec,
    telemetry: (stage) => ({ logger: silentLogger(`rcb-${stage}`), metrics: metrics(stage) }),
  };
  // Every Task state a stage of the table names, bound to that stage's handler.
  const states: Bindings['states'] = {};
  for (const [name, stage] of Object.entries(stages)) {
    const state = stateOf(stage);
    if (state) states[state] = handlerOf(name);
  }
  // PlanRun reads evaluator.deployed at each invocation: a deploy needs nothing more here.
  return { states, lanes, invocations: () => ({}), environments: () => ({}), deploy: () => undefined, events: sent };
}

/** The keys the emulated provider-keys secret holds: each hosted model's key variable, from this environment. */
function keysOfSpec(spec: RunSpec, modelsFile: string | undefined): Record<string, string> {
  const wanted = spec.models.filter((m) => !isOfflineSpec(m));
  if (!wanted.length) return {};
  const registry = loadRegistry(modelsFile ? { userFile: modelsFile } : {});
  const out: Record<string, string> = {};
  for (const m of wanted) {
    const entry = registry.find((e) => e.id === m.id);
    const name = entry && keyEnvFor(entry);
    const value = name ? process.env[name] : undefined;
    if (name && value) out[name] = value;
  }
  return out;
}

/** Batch size and maximum concurrency of the lanes' event source mappings (the first lane's: the simulation is one lane). */
function laneMapping(template: CfnTemplate): { batchSize?: number; concurrency?: number } {
  for (const r of Object.values(template.Resources)) {
    if (r.Type !== 'AWS::Lambda::EventSourceMapping') continue;
    const queue = (r.Properties?.EventSourceArn as { 'Fn::GetAtt'?: string[] } | undefined)?.['Fn::GetAtt']?.[0];
    if (!queue || !template.Resources[queue]?.Properties?.RedrivePolicy) continue;
    return { batchSize: r.Properties?.BatchSize, concurrency: r.Properties?.ScalingConfig?.MaximumConcurrency };
  }
  return {};
}

/** Bindings to the deployed bundles, each in its own processes (deployed-functions.ts). */
async function bundleBindings(
  aws: LocalAws,
  scratchDir: string,
  workflow: SynthesizedWorkflow,
  spec: RunSpec,
  options: EmulatorOptions,
  closers: Array<() => Promise<void>>,
  live: LiveFaults,
  evaluator: EmulatedEvaluator,
): Promise<Bindings> {
  const { template, assemblyDir } = workflow.deployment!;
  let lanes: SimulatedLanes | undefined;
  const secretArn = (id: string): string => `arn:aws:secretsmanager:us-east-1:${LOCAL_ACCOUNT}:secret:${id}`;
  const secrets: Record<string, string> = {};
  const sent: RunEndedDetail[] = [];
  const api = await startLocalAwsApi({
    onMessages: (_queue, bodies) => void lanes!.send(bodies.map((b) => ({ message: JSON.parse(b) as GenerationMessage, model: '' }))),
    secrets,
    onEvents: (entries) => {
      for (const e of entries) {
        if (e.Source === RUN_ENDED_EVENT.source && e.DetailType === RUN_ENDED_EVENT.detailType) sent.push(JSON.parse(e.Detail) as RunEndedDetail);
      }
    },
  });
  closers.push(() => api.close());
  const values: TokenValues = {
    ref: (id, type) => {
      if (type === 'AWS::DynamoDB::Table') return aws.storage.table;
      if (type === 'AWS::S3::Bucket') return aws.storage.bucket;
      if (type === 'AWS::SQS::Queue') return api.queueUrl(id);
      if (type === 'AWS::SecretsManager::Secret') return secretArn(id);
      // Ref of a task definition is its revision's ARN: the emulated evaluator's first one.
      if (type === 'AWS::ECS::TaskDefinition') return evaluator.revisions[0].taskDefinitionArn;
      // Ref of a version or an alias is its qualified ARN (PlanRun's RCB_FUNCTION_VERSIONS).
      const target = qualifiedFunction(template, id);
      if (target) return `arn:aws:lambda:us-east-1:${LOCAL_ACCOUNT}:function:emulated-${target.functionId}:${target.qualifier}`;
      return `emulated-${id}`;
    },
    getAtt: (id, type, attribute) => {
      if (type === 'AWS::SQS::Queue' && attribute === 'QueueUrl') return api.queueUrl(id);
      if (type === 'AWS::SQS::Queue' && attribute === 'Arn') return `arn:aws:sqs:us-east-1:${LOCAL_ACCOUNT}:${id}`;
      return `arn:aws:emulated:us-east-1:${LOCAL_ACCOUNT}:${id}`;
    },
  };
  for (const [id, r] of Object.entries(template.Resources)) {
    if (r.Type === 'AWS::SecretsManager::Secret') secrets[secretArn(id)] = JSON.stringify(options.keys ?? keysOfSpec(spec, options.modelsFile));
  }
  // What the emulator adds to a function's own environment: its servers and fake credentials.
  const local = aws.childEnv();
  const endpoints = {
    AWS_REGION: local.AWS_REGION,
    AWS_DEFAULT_REGION: local.AWS_REGION,
    AWS_ACCESS_KEY_ID: local.AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY: local.AWS_SECRET_ACCESS_KEY,
    RCB_DYNAMODB_ENDPOINT: local.RCB_DYNAMODB_ENDPOINT,
    RCB_S3_ENDPOINT: local.RCB_S3_ENDPOINT,
    RCB_SECRETS_ENDPOINT: api.endpoint,
    RCB_EVENTS_ENDPOINT: api.endpoint,
    // EMF lines would only fill the function logs: the CLI prints the run's progress.
    POWERTOOLS_METRICS_DISABLED: 'true',
  };
  const processes = new Map<string, FunctionProcesses>();
  for (const fn of deployedFunctions(template, assemblyDir)) {
    const env = Object.fromEntries(Object.entries(fn.environment).map(([k, v]) => [k, resolveValue(v, template, values)]));
    const p = new FunctionProcesses({ fn, root: join(scratchDir, 'lambda', fn.logicalId), env: { ...env, ...endpoints } });
    processes.set(fn.logicalId, p);
    closers.push(() => p.close());
  }
  // Every Lambda task state of the definition, bound to the bundle of the function it invokes.
  const states: Bindings['states'] = {};
  for (const [state, id] of functionsByState(workflow.definition.States)) {
    const p = processes.get(id);
    if (!p) throw new Error(`emulator: state ${state} invokes ${id}, which is no bundled function of the template`);
    states[state] = (i) => p.invoke(i);
  }
  // Lane queues have a redrive policy; their dead-letter queues have none. One consumer of each kind.
  const consumers = queueConsumers(template);
  const consumerOf = (dlq: boolean): FunctionProcesses => {
    const ids = [
      ...new Set([...consumers].filter(([queue]) => (template.Resources[queue]?.Properties?.RedrivePolicy === undefined) === dlq).map(([, fn]) => fn)),
    ];
    if (ids.length !== 1) throw new Error(`emulator: expected one function fed by the ${dlq ? 'dead-letter' : 'lane'} queues, found ${ids.length}`);
    return processes.get(ids[0])!;
  };
  // The functions the evaluator's deployment configures (PlanRun): a deploy updates them.
  const pinning = [...processes.values()].filter((p) => p.environment[EVALUATOR_ENV.taskDefinition] !== undefined);
  // Revision 1's image is the one the template names (the image asset's repository and tag).
  const image = pinning[0]?.environment[EVALUATOR_ENV.image];
  if (image) {
    evaluator.revisions[0].image = image;
    evaluator.deployed = evaluator.revisions[0];
  }
  const generator = consumerOf(false);
  const deadLetter = consumerOf(true);
  // A timed-out or crashed invocation returns its whole batch to the queue, as SQS does when
  // the function fails: redelivered, then dead-lettered.
  const consume =
    (fn: FunctionProcesses) =>
    (event: SQSEvent): Promise<SQSBatchResponse> =>
      (fn.invoke(event) as Promise<SQSBatchResponse>).catch((err: Error) => {
        if (err.name !== 'Sandbox.Timedout' && err.name !== 'Runtime.ExitError') throw err;
        return { batchItemFailures: event.Records.map((r) => ({ itemIdentifier: r.messageId })) };
      });
  const mapping = laneMapping(template);
  lanes = new SimulatedLanes(withPoison(live, consume(generator)), {
    deliverTwice: options.deliverTwice,
    maxReceiveCount: workflow.maxReceiveCount,
    batchSize: mapping.batchSize,
    concurrency: mapping.concurrency,
    deadLetterHandler: consume(deadLetter),
  });
  return {
    states,
    lanes,
    events: sent,
    invocations: () => Object.fromEntries([...processes].map(([id, p]) => [id, p.invocations])),
    environments: () => Object.fromEntries([...processes].map(([id, p]) => [id, p.environment])),
    // CloudFormation updates every function whose environment names the task definition;
    // their next invocations run in instances started with the new revision.
    deploy: (revision) => {
      for (const p of pinning) p.updateEnvironment({ [EVALUATOR_ENV.taskDefinition]: revision.taskDefinitionArn, [EVALUATOR_ENV.image]: revision.image });
    },
  };
}

/** PlanRun's variables naming the deployed evaluator (infra/orchestrator-construct.ts, app/stages/plan-run.ts). */
const EVALUATOR_ENV = { taskDefinition: 'RCB_TASK_DEFINITION', image: 'RCB_EVALUATION_IMAGE' } as const;

interface Prepared {
  aws: LocalAws;
  storage: StorageAdapters;
  state: EmulatorState;
  scratchDir: string;
  workflow: SynthesizedWorkflow;
  request: EmulatedRunRequest;
  runId: string;
  input: RunWorkflowInput;
  options: EmulatorOptions;
  closers: Array<() => Promise<void>>;
  closeAll: () => Promise<void>;
}

async function execute(prepared: Prepared, firstAttempt: Attempt, firstFaults: ExecutionFaults): Promise<EmulatedRun> {
  const { StateMachine } = await import('aws-local-stepfunctions');
  const { aws, storage, state, scratchDir, workflow, request, runId, input, options, closers, closeAll } = prepared;
  const spec = input.spec as RunSpec;
  const live: LiveFaults = { faults: {}, throttled: {}, shardRunsBefore: 0 };
  const evaluator = emulatedEvaluator(workflow);

  const bindings =
    (options.functions ?? 'bundles') === 'bundles'
      ? await bundleBindings(aws, scratchDir, workflow, spec, options, closers, live, evaluator)
      : sourceBindings(storage, workflow, options, live, evaluator);
  const { lanes } = bindings;

  // Parent of each container run's /scratch; test users (when this runs as root) must traverse it.
  const containerScratch = join(scratchDir, 'containers');
  mkdirSync(containerScratch, { recursive: true });
  chmodSync(scratchDir, 0o755);
  chmodSync(containerScratch, 0o755);
  const { states: topStates, maps } = withDistributedMapsAsTasks(withStepFunctionsTaskTimeouts(workflow.definition.States));
  const maxConcurrency = Number(maps.get(STATE_NAMES.evaluateShards)?.MaxConcurrency ?? 1) || 1;
  const shardsAtOnce = Math.min(maxConcurrency, Math.max(1, request.pset.papers.length));
  const shardRuns: ShardRunOutcome[] = [];
  if (!workflow.imageContext) throw new Error('emulator: the workflow carries no image build context (synthesize it with synthesizeWorkflow)');
  const app = containerApp(workflow.imageContext, options.containerAppCache);
  // What ECS tells a container of its image: the digest, here the image asset's hash.
  const metadata = await startContainerMetadata({
    imageId: `sha256:${workflow.imageContext.digest}`,
    image: `rcb-evaluation:${workflow.imageContext.digest.slice(0, 12)}`,
    // infra/evaluation-construct.ts EVALUATOR_CONTAINER_NAME (not imported: it loads the CDK).
    containerName: 'evaluator',
  });
  closers.push(() => metadata.close());
  const evaluateShard = shardContainerHandler({
    app,
    baseEnv: {
      ...aws.childEnv(),
      ECS_CONTAINER_METADATA_URI_V4: metadata.uri,
      RCB_PYTHON: options.python ?? (process.env.RCB_PYTHON || 'python3'),
      RCB_JOBS: String(options.jobs ?? Math.max(1, Math.floor(cpus().length / shardsAtOnce))),
      ...(options.unsafeNoSandbox ? { RCB_SANDBOX: 'none' } : {}),
    },
    scratchRoot: containerScratch,
    failFirstRunOnce: options.failFirstShardOnce,
    failShard: (paper, shardRef) => live.faults.failShard?.(paper, shardRef) ?? false,
    onExit: (outcome) => {
      shardRuns.push(outcome);
      options.onShardExit?.(outcome);
      const deployAfter = live.faults.deployImageAfterShards;
      if (deployAfter !== undefined && shardRuns.length - live.shardRunsBefore === deployAfter) {
        deployNewRevision(evaluator);
        bindings.deploy(evaluator.deployed);
      }
    },
    // ECS starts only a registered revision (the retained ones stay ACTIVE).
    checkTaskDefinition: (arn) => {
      if (!evaluator.revisions.some((r) => r.taskDefinitionArn === arn)) throw new Error(`ClientException: TaskDefinition not found: ${arn}`);
    },
  });

  const note = options.onState ?? (() => undefined);
  const bound =
    (state: string, fn: (input: any) => Promise<unknown>) =>
    async (stateInput: any): Promise<any> => {
      try {
        // An injected throttle: Lambda refuses the invocation before the function runs.
        const limit = live.faults.throttle?.[state] ?? 0;
        if ((live.throttled[state] ?? 0) < limit) {
          live.throttled[state] = (live.throttled[state] ?? 0) + 1;
          const err = new Error(`Rate exceeded (injected throttle of ${state})`);
          err.name = 'Lambda.TooManyRequestsException';
          throw err;
        }
        const result = await fn(stateInput);
        note(state, result);
        return result;
      } catch (err) {
        note(state, { error: (err as Error).name });
        throw err;
      }
    };
  const handlers: Record<string, (input: any) => Promise<any>> = {
    ...Object.fromEntries(Object.entries(bindings.states).map(([name, fn]) => [name, bound(name, fn)])),
    [STATE_NAMES.evaluateShard]: bound(STATE_NAMES.evaluateShard, evaluateShard),
    [STATE_NAMES.evaluateShardOnDemand]: bound(STATE_NAMES.evaluateShardOnDemand, evaluateShard),
  };
  // Retries keep their count and order; only the pauses between them go.
  const retryIntervalOverrides = Object.fromEntries(statesWithRetry(workflow.definition.States).map((name) => [name, 0]));
  let mapRuns: DistributedMapRun[] = [];
  let executionName = runId;
  for (const [name, map] of maps) {
    // The Map's child state machine: its ItemProcessor, validated once as Step Functions
    // validates a definition once, each item then a separate execution of it (its own
    // history, Retry and Catch). Validating per child cost about a third of a second of this
    // process's CPU per shard (asl-validator compiles its schemas each time).
    const { ProcessorConfig: _config, ...processor } = map.ItemProcessor as Record<string, unknown>;
    const children = new StateMachine(processor as never, { validationOptions: { checkArn: false } });
    handlers[name] = bound(name, (mapInput) =>
      runDistributedMap({
        name,
        map,
        input: mapInput,
        executionName,
        blobs: storage.blobs,
        onRun: (r) => mapRuns.push(r),
        // Each item its own execution of the ItemProcessor, as a Distributed Map's child.
        runChild: (_processor, childInput) =>
          children.run(childInput as never, {
            overrides: { taskResourceLocalHandlers: handlers, retryIntervalOverrides },
          }).result,
      }),
    );
  }
  const machine = new StateMachine({ ...workflow.definition, States: topStates } as never, { validationOptions: { checkArn: false } });
  const executeOnce = async (these: ExecutionFaults, given?: Attempt): Promise<EmulatedRun> => {
    // A new execution name per attempt, as `rcb cloud run` starts one (core/cloud/execution-attempts.ts).
    const attempt = given ?? (await startOrFollow(state, runId, restartWithFailures(storage.store, runId)));
    if (!attempt.started) return followed(state, storage, runId, input, attempt, closeAll);
    live.faults = these;
    live.throttled = {};
    live.shardRunsBefore = shardRuns.length;
    mapRuns = [];
    executionName = attempt.name;
    const eventsBefore = bindings.events.length;
    const execution = machine.run(input as unknown as Parameters<typeof machine.run>[0], {
      // $$.Execution.Name: the attempt's name, which its waves and results are kept under.
      context: { Execution: { Name: attempt.name } },
      overrides: {
        taskResourceLocalHandlers: handlers,
        waitTimeOverrides: {
          [STATE_NAMES.waitForGeneration]: options.generationPollMs ?? 100,
          [STATE_NAMES.waitForBatches]: options.batchPollMs ?? options.generationPollMs ?? 100,
        },
        retryIntervalOverrides,
      },
    });
    const history: ExecutionHistory = { events: 0, byType: {}, entered: {} };
    const logged = countHistory(execution.eventLogs as AsyncIterable<{ type: string; state?: { name: string } }>, history);
    let output: unknown;
    let error: EmulatedRun['error'];
    try {
      output = await execution.result;
    } catch (err) {
      const e = err as Error & { cause?: { name?: string; message?: string } };
      error = { name: e.cause?.name ?? e.name, message: e.cause?.message ?? e.message };
    }
    // The logger closes with the execution's last event (succeeded, failed, aborted, timed out).
    await logged;
    state.finish(attempt.name, error ? { status: 'FAILED', error: error.name, cause: error.message } : { status: 'SUCCEEDED' });
    // Deliveries still in flight (duplicates of settled tasks) and containers of aborted Map
    // iterations finish before the outcome is read (or the servers stop).
    await lanes.drained().catch(() => undefined);
    await evaluateShard.settled();
    return {
      runId,
      input,
      execution: attempt,
      output,
      error,
      succeeded: !error,
      store: storage.store,
      counters: storage.counters,
      blobs: storage.blobs,
      lanes: lanes.stats,
      shardRuns,
      containerApp: app.appDir,
      invocations: bindings.invocations(),
      ...(aws.usage ? { usage: aws.usage } : {}),
      environments: bindings.environments(),
      mapRuns,
      history,
      throttled: { ...live.throttled },
      evaluator,
      events: bindings.events.slice(eventsBefore),
      runAgain: (next = {}) => executeOnce(next),
      close: closeAll,
    };
  };
  return executeOnce(firstFaults, firstAttempt);
}

/** Names of the states with a Retry, those of Map item processors and Parallel branches included. */
export function statesWithRetry(states: Record<string, Record<string, unknown>>): string[] {
  return Object.entries(states).flatMap(([name, state]) => {
    const nested = [state.ItemProcessor, state.Iterator, ...((state.Branches as unknown[]) ?? [])] as Array<
      { States?: Record<string, Record<string, unknown>> } | undefined
    >;
    return [...('Retry' in state ? [name] : []), ...nested.flatMap((n) => (n?.States ? statesWithRetry(n.States) : []))];
  });
}
