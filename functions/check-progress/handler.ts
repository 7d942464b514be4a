/**
 * CheckProgress (Step Functions task, in the Wait -> CheckProgress -> GenerationDone? loop):
 * report whether every task of the run is settled (a completion, or a final failure).
 * It owns the generation deadline: past RCB_GENERATION_TIMEOUT_SEC since the run started it
 * throws, which sends the run to MarkRunFailed.
 *
 * Minimal until the runtime issue fills it in.
 *
 * Environment: RCB_TABLE, RCB_BUCKET, RCB_LANE_QUEUES, RCB_LANE_DLQS (JSON lane -> URL),
 * RCB_GENERATION_TIMEOUT_SEC.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { z } from 'zod';

const logger = new Logger();

export const checkProgressInputSchema = z.object({ runId: z.string().min(1) });
export type CheckProgressInput = z.infer<typeof checkProgressInputSchema>;

/** Kept at `$.progress`; the Choice state reads `$.progress.done`. */
export interface CheckProgressResult {
  done: boolean;
  total: number;
  settled: number;
  failed: number;
}

export async function handler(event: unknown): Promise<CheckProgressResult> {
  const input = checkProgressInputSchema.parse(event);
  logger.appendKeys({ runId: input.runId });
  logger.error('check-progress is not implemented yet');
  throw new Error(`rcb: CheckProgress is not implemented yet (run ${input.runId})`);
}
