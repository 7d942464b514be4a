/**
 * CheckProgress (Step Functions task): the Lambda entry point. The stage (its input, use case, logs and metrics) and its
 * wiring are app/stages/check-progress.ts, which the emulator binds too; configuration is read on the
 * first invocation, never at module load.
 *
 * Environment: RCB_TABLE, RCB_BUCKET, RCB_GENERATION_TIMEOUT_SEC, RCB_POLL_MIN_SEC, RCB_POLL_MAX_SEC.
 */
import { once } from '../../adapters/aws/runtime/cloud-config';
import { createHandler, deployedCheckProgressDeps, loadConfig } from '../../app/stages/check-progress';

export const handler = createHandler(once(() => deployedCheckProgressDeps(loadConfig())));
