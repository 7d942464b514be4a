/**
 * A stage of the cloud run (its Lambda entry point is functions/mark-failed/handler.ts):
 * MarkRunFailed (the workflow's catch path): set the run's status to `failed` with the
 * error that stopped it. Completions and verdicts already written stay; a resumed run
 * reuses them.
 *
 * Environment: RCB_TABLE, RCB_BUCKET.
 */
import { markRunFailed } from '../../core/cloud/mark-run-failed';
import { markRunFailedInputSchema, parsePayload, stateFailureSchema, type MarkRunFailedInput } from '../../core/cloud/payloads';
import type { RunStore } from '../../core/store';
import { loadStorageConfig, type StorageConfig } from '../../adapters/aws/runtime/cloud-config';
import { createStorageAdapters } from '../../adapters/aws/runtime/cloud-adapters';
import { lambdaTelemetry, stageHandler, type StageHandler, type StageTelemetry } from '../../adapters/aws/runtime/stage-lifecycle';
import type { CloudStage } from './cloud-stage';

export { markRunFailedInputSchema, stateFailureSchema };
export type { MarkRunFailedInput };

export function loadConfig(env: NodeJS.ProcessEnv = process.env): { storage: StorageConfig } {
  return { storage: loadStorageConfig(env) };
}

/** MarkRunFailed's dependencies: the run store, and a logger (it records no metric). */
export interface MarkFailedHandlerDeps extends StageTelemetry {
  store: RunStore;
}

export function createHandler(getDeps: () => MarkFailedHandlerDeps): StageHandler<unknown, void> {
  return stageHandler({ failure: 'recording the run failure failed' }, getDeps, async (event: unknown, deps, invocation) => {
    const input = parsePayload(markRunFailedInputSchema, event, 'MarkRunFailed input');
    invocation.annotate({ runId: input.runId });
    deps.logger.error('run failed', { failure: input.failure });
    await markRunFailed(deps.store, input);
  });
}

/** The deployed function's: the run store from its configuration. */
export function deployedMarkFailedDeps(config: { storage: StorageConfig }): MarkFailedHandlerDeps {
  const { logger, tracer } = lambdaTelemetry('mark-failed');
  return { store: createStorageAdapters(config.storage, { tracer }).store, logger, tracer };
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
  localDeps: (parts) => ({ store: parts.storage.store, logger: parts.telemetry('mark-failed').logger }),
  createHandler,
  monitoring: { name: 'mark-failed' },
} satisfies CloudStage<{ storage: StorageConfig }, MarkFailedHandlerDeps>;
