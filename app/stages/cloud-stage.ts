/**
 * What one stage of the cloud run is, in one typed entry (the table is app/stages/index.ts):
 * the workflow state that invokes it (or the queues it consumes), its function folder and
 * construct, its configuration loader, its dependency builders (deployed: AWS adapters from
 * that configuration; local: the emulator's adapters) and its handler. Infra creates a
 * function per entry, the stack alarms on each, the emulator binds each; adding a stage is
 * docs: CONTRIBUTING.md "Add a cloud stage".
 *
 * No CDK import, and of the adapters only `once`: every Lambda bundle imports this file.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { KeySource } from '../../core/keys';
import type { ModelClient } from '../../core/model';
import type { TaskQueue } from '../../core/cloud/ports';
import type { EventPublisher } from '../../core/cloud/run-events';
import type { HostedModels } from '../../adapters/models/hosted-models';
import type { StorageAdapters } from '../../adapters/aws/runtime/cloud-adapters';
import { once } from '../../adapters/aws/runtime/cloud-config';

/** The construct of the stack that owns a stage's function (its construct path, and so its logical ids). */
export type StageConstruct = 'generation' | 'orchestrator';

/** What invokes a stage: a Task state of the run workflow, or the SQS queues it consumes. */
export type StageTrigger =
  | {
      /** The Task state's name (infra/state-names.ts reads it from the table). */
      readonly state: string;
      /**
       * Where OrchestratorConstruct puts the state. `phase`: a phase method places it by
       * hand (the shipped stages); `after-aggregate`: a Task after Aggregate, in table order,
       * given the run id and the execution name (its result discarded), its failure caught
       * to MarkRunFailed; its function must be the orchestrator's.
       */
      readonly placement: 'phase' | 'after-aggregate';
    }
  | {
      /** The generation lanes' queues, or their dead-letter queues (one consumer of each). */
      readonly queues: 'lanes' | 'dead-letters';
    };

/** The stage's Lambda function, as infra creates it (settings that depend on the stack's props stay in its construct). */
export interface StageFunction {
  readonly construct: StageConstruct;
  /** Construct id of its RcbFunction: part of every logical id of the function, so never renamed. */
  readonly id: string;
  /** Folder under functions/ whose `handler.ts` exports `handler` (also its Powertools service name). */
  readonly dir: string;
  /** What the function does, shown in the console. */
  readonly description: string;
  /** Its handler file, when not `functions/<dir>/handler.ts` (a stage a test defines). @default functions/<dir>/handler.ts */
  readonly entry?: string;
}

/** What the emulator hands a stage's local dependency builder: its in-process adapters. */
export interface LocalStageParts {
  storage: StorageAdapters;
  keys: KeySource;
  /** Registry and keys for hosted models; loaded on first need. */
  hosted: () => HostedModels;
  /** Offline clients by id that override the defaults (tests count calls with these). */
  clients?: Map<string, ModelClient>;
  /** The generation lanes PlanRun enqueues on. */
  queue: TaskQueue;
  /** The evaluator deployment a new run pins, read at each invocation (a deploy mid-run changes it). */
  evaluation: () => { taskDefinitionArn: string; image: string };
  /** RCB_GENERATION_TIMEOUT_SEC of the synthesized stack, when it sets one. */
  generationTimeoutSec?: number;
  /** Where the run-ended events go (the emulator records them). @default none sent */
  events?: EventPublisher;
  /** The stage's logger and metrics, by its function folder's name. */
  telemetry: (stage: string) => { logger: Logger; metrics: Metrics };
}

/** A handler as a stage builds it: the event (and the Lambda context) to a result. */
export type StageEntryHandler = (event: any, context?: any) => Promise<unknown>;

/** One stage of the cloud run. */
export interface CloudStage<Config = any, Deps = any> {
  readonly trigger: StageTrigger;
  readonly function: StageFunction;
  /** Its configuration from the function's environment (read on the first invocation). */
  readonly loadConfig: (env?: NodeJS.ProcessEnv) => Config;
  /** The deployed function's dependencies: AWS adapters from its configuration. */
  readonly deployedDeps: (config: Config) => Deps;
  /** The emulator's dependencies, from its in-process adapters (called at each invocation). */
  readonly localDeps: (parts: LocalStageParts) => Deps;
  /** The handler over a source of dependencies: parse the event, call the use case, log and count. */
  readonly createHandler: (getDeps: () => Deps) => StageEntryHandler;
  /** Alarms on the function's errors and throttles, under this name (infra/monitoring-construct.ts). */
  readonly monitoring: { readonly name: string };
}

/** A table of stages by name: CLOUD_STAGES, or a test's with stages of its own. */
export type StageTable = Readonly<Record<string, CloudStage>>;

/** The Lambda entry point of a stage: its configuration read on the first invocation, never at module load. */
export function lambdaHandler<C, D>(stage: CloudStage<C, D>): StageEntryHandler {
  return stage.createHandler(once(() => stage.deployedDeps(stage.loadConfig())));
}

/** The Task state of a stage invoked by the workflow, else undefined. */
export function stateOf(stage: CloudStage): string | undefined {
  return 'state' in stage.trigger ? stage.trigger.state : undefined;
}

/** The one stage that consumes the lanes' queues, or their dead-letter queues. */
export function queueConsumer(stages: StageTable, queues: 'lanes' | 'dead-letters'): string {
  const names = Object.entries(stages)
    .filter(([, stage]) => 'queues' in stage.trigger && stage.trigger.queues === queues)
    .map(([name]) => name);
  if (names.length !== 1) throw new Error(`the stage table must have one consumer of the ${queues} queues, has ${names.length} (app/stages/index.ts)`);
  return names[0];
}
