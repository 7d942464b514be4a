/**
 * MarkRunFailed (the workflow's catch path): set the run's status to `failed` with the
 * error that stopped it. Completions and verdicts already written stay; a resumed run
 * reuses them.
 *
 * Minimal until the runtime issue fills it in.
 *
 * Environment: RCB_TABLE, RCB_BUCKET.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { z } from 'zod';

const logger = new Logger();

/** Step Functions' error object, as a Catch with ResultPath `$.failure` stores it. */
export const stateFailureSchema = z.object({ Error: z.string(), Cause: z.string().optional() });

export const markRunFailedInputSchema = z.object({
  runId: z.string().min(1),
  failure: stateFailureSchema,
});
export type MarkRunFailedInput = z.infer<typeof markRunFailedInputSchema>;

export async function handler(event: unknown): Promise<void> {
  const input = markRunFailedInputSchema.parse(event);
  logger.appendKeys({ runId: input.runId });
  logger.error('mark-failed is not implemented yet', { failure: input.failure });
  throw new Error(`rcb: MarkRunFailed is not implemented yet (run ${input.runId})`);
}
