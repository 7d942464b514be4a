/**
 * Reading SQS message bodies at the boundary. The payload types themselves live in
 * core/cloud/payloads.ts (one exported type per message, shared with the handlers).
 */
import { generationMessageSchema, parsePayload, type GenerationMessage } from '../../core/cloud/payloads';

export { generationMessageSchema, type GenerationMessage };

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
  try {
    return parsePayload(generationMessageSchema, raw, 'generation message');
  } catch (err) {
    throw new MessageFormatError((err as Error).message);
  }
}
