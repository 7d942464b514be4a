/**
 * Generate (SQS lanes -> Lambda): the Lambda entry point. The stage (its input, use case, logs and metrics) and its
 * wiring are app/stages/generate.ts, which the emulator binds too; configuration is read on the
 * first invocation, never at module load.
 *
 * Environment: RCB_TABLE, RCB_BUCKET, RCB_KEYS_SECRET_ARN.
 */
import { once } from '../../adapters/aws/runtime/cloud-config';
import { createHandler, deployedGenerateDeps, loadConfig } from '../../app/stages/generate';

export const handler = createHandler(once(() => deployedGenerateDeps(loadConfig())));
