/** What the Lambda handler tests give their handlers: SQS events and a planned run. */
import type { SQSEvent } from 'aws-lambda';
import { planCloudRun } from '../../core/cloud/plan-cloud-run';
import { cloudFixture, type CloudFixture } from '../cloud/cloud-fixture';

/** An SQS event of one record per body, as a lane (or its dead-letter queue) delivers it. */
export function sqsEvent(bodies: string[], opts: { queueArn?: string; receiveCount?: number } = {}): SQSEvent {
  return {
    Records: bodies.map((body, i) => ({
      messageId: `m${i}`,
      receiptHandle: `rh${i}`,
      body,
      attributes: (opts.receiveCount === undefined ? {} : { ApproximateReceiveCount: String(opts.receiveCount) }) as never,
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: opts.queueArn ?? 'arn:aws:sqs:us-east-1:123456789012:lane',
      awsRegion: 'us-east-1',
    })),
  };
}

/** A one-paper run (grouprms), planned: its generation messages sent to the fixture's queue. */
export async function planned(): Promise<CloudFixture> {
  const f = await cloudFixture({ papers: ['grouprms'] });
  await planCloudRun({ store: f.store, blobs: f.blobs, queue: f.queue, scratchDir: f.scratchDir }, f.input);
  return f;
}
