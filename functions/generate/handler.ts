/**
 * Generate (SQS lanes -> Lambda, ReportBatchItemFailures): for each task message, reserve
 * budget on the run item, call the model with keys from the provider keys secret, store
 * the completion (first write wins), settle the actual cost.
 *
 * Minimal until the runtime issue fills it in with Powertools BatchProcessor and the
 * generate use case: every record is reported as failed, so nothing is acknowledged that
 * was not done; messages retry and then move to the lane's DLQ.
 *
 * Environment: RCB_TABLE, RCB_BUCKET, RCB_KEYS_SECRET_ARN.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { z } from 'zod';

const logger = new Logger();

/** Body of one lane message, as PlanRun sends it. */
export const generationMessageSchema = z.object({
  runId: z.string().min(1),
  taskId: z.string().min(1),
});
export type GenerationMessage = z.infer<typeof generationMessageSchema>;

export async function handler(event: SQSEvent): Promise<SQSBatchResponse> {
  logger.error('generate is not implemented yet; reporting the whole batch as failed', {
    messages: event.Records.length,
  });
  return { batchItemFailures: event.Records.map((r) => ({ itemIdentifier: r.messageId })) };
}
