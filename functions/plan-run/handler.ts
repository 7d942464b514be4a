/**
 * PlanRun (Step Functions task): the Lambda entry point. The stage (its input, use case, logs and metrics) and its
 * wiring are app/stages/plan-run.ts, which the emulator binds too; configuration is read on the
 * first invocation, never at module load.
 *
 * Environment: RCB_TABLE, RCB_BUCKET, RCB_LANE_QUEUES, RCB_EVALUATION_READY.
 */
import { once } from '../../adapters/aws/runtime/cloud-config';
import { createHandler, deployedPlanRunDeps, loadConfig } from '../../app/stages/plan-run';

export const handler = createHandler(once(() => deployedPlanRunDeps(loadConfig())));
