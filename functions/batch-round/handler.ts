/**
 * BatchRound (Step Functions task of the batch lane): the Lambda entry point. The stage (its input, use case, logs and metrics) and its
 * wiring are app/stages/batch-round.ts, which the emulator binds too; configuration is read on the
 * first invocation, never at module load.
 *
 * Environment: RCB_TABLE, RCB_BUCKET, RCB_KEYS_SECRET_ARN, RCB_BATCH_POLL_MIN_SEC, RCB_BATCH_POLL_MAX_SEC, RCB_GENERATION_TIMEOUT_SEC.
 */
import { once } from '../../adapters/aws/runtime/cloud-config';
import { createHandler, deployedBatchRoundDeps, loadConfig } from '../../app/stages/batch-round';

export const handler = createHandler(once(() => deployedBatchRoundDeps(loadConfig())));
