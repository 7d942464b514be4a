/**
 * Payloads the AWS adapters send and receive, validated with zod at the boundary.
 *
 * Kept here for now; the shared payload types are to move into core/ (STYLE.md: one
 * exported type per message, in core), with this file re-exporting them.
 */
import { z } from 'zod';

/** One generation job on an SQS lane: ask the task's model for its completion. */
export const generationMessageSchema = z
  .object({
    /** The run the task belongs to (its budget is reserved on this run's item). */
    runId: z.string().min(1),
    /** The task to answer; the task record is read from the run store by this id. */
    taskId: z.string().min(1),
  })
  .strict();

export type GenerationMessage = z.infer<typeof generationMessageSchema>;

/** A message body that is not a GenerationMessage; the message says what is wrong. */
export class MessageFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MessageFormatError';
  }
}

/** Parses an SQS message body; throws MessageFormatError (not retryable) when it is malformed. */
export function parseGenerationMessage(body: string): GenerationMessage {
  let raw: unknown;
  try {
    raw = JSON.parse(body);
  } catch {
    throw new MessageFormatError(`generation message is not JSON: ${JSON.stringify(body.slice(0, 200))}`);
  }
  const parsed = generationMessageSchema.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new MessageFormatError(`generation message is malformed: ${issues}`);
  }
  return parsed.data;
}
