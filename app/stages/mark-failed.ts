/**
 * A stage of the cloud run (its Lambda entry point is functions/mark-failed/handler.ts):
 * MarkRunFailed (the workflow's catch path): set the run's status to `failed` with the
 * error that stopped it. Completions and verdicts already written stay; a resumed run
 * reuses them.
 *
 * Environment: RCB_TABLE, RCB_BUCKET.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { markRunFailed } from '../../core/cloud/mark-run-failed';
import { markRunFailedInputSchema, parsePayload, stateFailureSchema, type MarkRunFailedInput } from '../../core/cloud/payloads';
import type { RunStore } from '../../core/store';
import { loadStorageConfig, type StorageConfig } from '../../adapters/aws/runtime/cloud-config';
import { createStorageAdapters } from '../../adapters/aws/runtime/cloud-adapters';

export { markRunFailedInputSchema, stateFailureSchema };
export type { MarkRunFailedInput };

export function loadConfig(env: NodeJS.ProcessEnv = process.env): { storage: StorageConfig } {
  return { storage: loadStorageConfig(env) };
}

export function createHandler(getDeps: () => { store: RunStore; logger: Logger }): (event: unknown) => Promise<void> {
  return async (event) => {
    const input = parsePayload(markRunFailedInputSchema, event, 'MarkRunFailed input');
    const deps = getDeps();
    deps.logger.appendKeys({ runId: input.runId });
    try {
      deps.logger.error('run failed', { failure: input.failure });
      await markRunFailed(deps.store, input);
    } finally {
      deps.logger.removeKeys(['runId']);
    }
  };
}

/** The deployed function's: the run store from its configuration. */
export function deployedMarkFailedDeps(config: { storage: StorageConfig }): { store: RunStore; logger: Logger } {
  return { store: createStorageAdapters(config.storage).store, logger: new Logger({ serviceName: 'rcb-mark-failed' }) };
}
