/**
 * The core TaskQueue port on SQS lanes (PlanRun's queue). Its own module: routing a message
 * to its provider's lane reads the provider table, which imports every provider's SDK, so
 * only what sends generation messages bundles them (not the evaluation container, whose
 * image would load some 2.5 MB of model clients at each shard's start).
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import { SqsTaskQueue, type LaneRouting } from '../sqs-task-queue';
import type { QueuedGeneration, TaskQueue } from '../../../core/cloud/ports';

export class LaneTaskQueue implements TaskQueue {
  private readonly sqs: SqsTaskQueue;
  constructor(
    client: SQSClient,
    routing: LaneRouting,
    private readonly providerOf: (model: string) => string,
  ) {
    this.sqs = new SqsTaskQueue(client, routing);
  }

  async send(messages: QueuedGeneration[]): Promise<void> {
    await this.sqs.enqueue(messages.map((m) => ({ message: m.message, provider: this.providerOf(m.model) })));
  }
}
