/** Ports the cloud use cases need beyond core/store.ts. */
import type { GenerationMessage } from './payloads';

/** A generation message with the model of its task, so the queue can pick the provider's lane. */
export interface QueuedGeneration {
  message: GenerationMessage;
  /** Model id of the task (the adapter maps it to a provider lane). */
  model: string;
}

/** Generation work for the cloud: SQS lanes in AWS, a list in the emulator and the tests. */
export interface TaskQueue {
  /** Sends every message or throws; a message sent twice is harmless (the generator is idempotent). */
  send(messages: QueuedGeneration[]): Promise<void>;
}
