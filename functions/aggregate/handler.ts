/**
 * Aggregate (Step Functions task): score the run from its verdicts, write reports to
 * `runs/<runId>/reports/` in the bucket and the summary item, set the final run status.
 *
 * Minimal until the runtime issue fills it in.
 *
 * Environment: RCB_TABLE, RCB_BUCKET.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { z } from 'zod';

const logger = new Logger();

export const aggregateInputSchema = z.object({ runId: z.string().min(1) });
export type AggregateInput = z.infer<typeof aggregateInputSchema>;

/** Kept at `$.summary` in the execution output. */
export interface AggregateResult {
  runId: string;
  status: 'succeeded' | 'budget_exhausted';
  reportPrefix: string;
}

export async function handler(event: unknown): Promise<AggregateResult> {
  const input = aggregateInputSchema.parse(event);
  logger.appendKeys({ runId: input.runId });
  logger.error('aggregate is not implemented yet');
  throw new Error(`rcb: Aggregate is not implemented yet (run ${input.runId})`);
}
