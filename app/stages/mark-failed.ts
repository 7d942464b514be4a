/**
 * A stage of the cloud run (its Lambda entry point is functions/mark-failed/handler.ts):
 * MarkRunFailed (the workflow's catch path): set the run's status to `failed` with the
 * error that stopped it. Completions and verdicts already written stay; a resumed run
 * reuses them.
 *
 * Environment: RCB_TABLE, RCB_BUCKET, RCB_EVENT_BUS (the run-ended event's bus; RCB_EVENTS_ENDPOINT in the emulator).
 */
import { markRunFailed } from '../../core/cloud/mark-run-failed';
import { markRunFailedInputSchema, parsePayload, stateFailureSchema, type MarkRunFailedInput } from '../../core/cloud/payloads';
import type { RunStore } from '../../core/store';
import type { EventPublisher } from '../../core/cloud/run-events';
import { runEventPublisher } from '../run-events';
import { loadEventsConfig, loadStorageConfig, type EventsConfig, type StorageConfig } from '../../adapters/aws/runtime/cloud-config';
import { createStorageAdapters } from '../../adapters/aws/runtime/cloud-adapters';
import { lambdaTelemetry, stageHandler, type StageHandler, type StageTelemetry } from '../../adapters/aws/runtime/stage-lifecycle';
import type { CloudStage } from './cloud-stage';

export { markRunFailedInputSchema, stateFailureSchema };
export type { MarkRunFailedInput };

export function loadConfig(env: NodeJS.ProcessEnv = process.env): { storage: StorageConfig; events?: EventsConfig } {
  return { storage: loadStorageConfig(env), events: loadEventsConfig(env) };
}

/** MarkRunFailed's dependencies: the run store, and a logger (it records no metric). */
export interface MarkFailedHandlerDeps extends StageTelemetry {
  store: RunStore;
  /** Where the run-ended event goes (docs/cloud.md#run-events). @default none sent */
  events?: EventPublisher;
}

export function createHandler(getDeps: () => MarkFailedHandlerDeps): StageHandler<unknown, void> {
  return stageHandler({ failure: 'recording the run failure failed' }, getDeps, async (event: unknown, deps, invocation) => {
    const input = parsePayload(markRunFailedInputSchema, event, 'MarkRunFailed input');
    invocation.annotate({ runId: input.runId });
    deps.logger.error('run failed', { failure: input.failure });
    const eventError = await markRunFailed(deps.store, input, deps.events);
    if (eventError) deps.logger.warn('run-ended event not sent', { error: eventError });
  });
}

/** The deployed function's: the run store from its configuration. */
export function deployedMarkFailedDeps(config: { storage: StorageConfig; events?: EventsConfig }): MarkFailedHandlerDeps {
  const { logger, tracer } = lambdaTelemetry('mark-failed');
  const events = runEventPublisher(config.events, { tracer });
  return { store: createStorageAdapters(config.storage, { tracer }).store, ...(events ? { events } : {}), logger, tracer };
}

/** The stage's entry of app/stages/index.ts. */
export const markFailedStage = {
  trigger: { state: 'MarkRunFailed', placement: 'phase' },
  function: {
    construct: 'orchestrator',
    id: 'MarkRunFailedFunction',
    dir: 'mark-failed',
    description: 'rcb: marks a run failed with its error; finished completions and verdicts stay',
  },
  loadConfig,
  deployedDeps: deployedMarkFailedDeps,
  localDeps: (parts) => ({ store: parts.storage.store, ...(parts.events ? { events: parts.events } : {}), logger: parts.telemetry('mark-failed').logger }),
  createHandler,
  monitoring: { name: 'mark-failed' },
} satisfies CloudStage<{ storage: StorageConfig; events?: EventsConfig }, MarkFailedHandlerDeps>;
