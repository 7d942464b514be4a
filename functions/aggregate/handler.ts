/**
 * Aggregate (Step Functions task): the Lambda entry point. The stage (its input, use case, logs and metrics) and its
 * wiring are app/stages/aggregate.ts, which the emulator binds too; configuration is read on the
 * first invocation, never at module load.
 *
 * Environment: RCB_TABLE, RCB_BUCKET.
 */
import { once } from '../../adapters/aws/runtime/cloud-config';
import { createHandler, deployedAggregateDeps, loadConfig } from '../../app/stages/aggregate';

export const handler = createHandler(once(() => deployedAggregateDeps(loadConfig())));
