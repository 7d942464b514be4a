/**
 * MarkRunFailed (the workflow's catch path): the Lambda entry point. The stage (its input, use case, logs and metrics) and its
 * wiring are app/stages/mark-failed.ts, which the emulator binds too; configuration is read on the
 * first invocation, never at module load.
 *
 * Environment: RCB_TABLE, RCB_BUCKET.
 */
import { once } from '../../adapters/aws/runtime/cloud-config';
import { createHandler, deployedMarkFailedDeps, loadConfig } from '../../app/stages/mark-failed';

export const handler = createHandler(once(() => deployedMarkFailedDeps(loadConfig())));
