/**
 * DeadLetter (each lane's DLQ -> Lambda): the Lambda entry point. The stage (its input, use case, logs and metrics) and its
 * wiring are app/stages/dead-letter.ts, which the emulator binds too; configuration is read on the
 * first invocation, never at module load.
 *
 * Environment: RCB_TABLE, RCB_BUCKET.
 */
import { once } from '../../adapters/aws/runtime/cloud-config';
import { createHandler, deployedDeadLetterDeps, loadConfig } from '../../app/stages/dead-letter';

export const handler = createHandler(once(() => deployedDeadLetterDeps(loadConfig())));
