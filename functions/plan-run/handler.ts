/**
 * PlanRun (Step Functions task): validate the run spec, write the run and its tasks,
 * refuse a spec whose estimate exceeds the budget (unless forced), enqueue one SQS message
 * per task on its provider's lane, and list the shards (papers) to evaluate.
 *
 * Minimal until the runtime issue fills it with the plan use case: it checks its input and
 * fails the run with a clear error instead of pretending to plan.
 *
 * Environment: RCB_TABLE, RCB_BUCKET, RCB_LANE_QUEUES (JSON lane -> queue URL),
 * RCB_EVALUATION_READY ("true" | "false").
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { z } from 'zod';

const logger = new Logger();

/** Execution input of the run workflow, as `rcb cloud run` starts it. */
export const runWorkflowInputSchema = z.object({
  /** Id of the run; also the execution name. */
  runId: z.string().min(1),
  /** The RunSpec (core/store.ts), or where it is stored. */
  spec: z.unknown(),
  /** Plan even when the estimate exceeds the budget. */
  force: z.boolean().optional(),
});
export type RunWorkflowInput = z.infer<typeof runWorkflowInputSchema>;

/** One evaluation shard: the candidates of one paper, all models. */
export interface ShardRef {
  paper: string;
}

/** What PlanRun returns; the workflow keeps it at `$.plan` and maps over `$.plan.shards`. */
export interface PlanRunResult {
  runId: string;
  taskCount: number;
  estimatedCostUsd: number;
  shards: ShardRef[];
}

export async function handler(event: unknown): Promise<PlanRunResult> {
  const input = runWorkflowInputSchema.parse(event);
  logger.appendKeys({ runId: input.runId });
  logger.error('plan-run is not implemented yet');
  throw new Error(`rcb: PlanRun is not implemented yet (run ${input.runId})`);
}
