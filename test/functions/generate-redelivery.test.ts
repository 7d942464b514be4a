/**
 * A record the generator hands back comes round after a short backoff (docs/cloud.md
 * "Redelivery backoff"): with a store fault on one task, the handler reports it in
 * batchItemFailures and shortens its visibility through SQS's ChangeMessageVisibilityBatch
 * (aws-sdk-client-mock), by its delivery count.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { ChangeMessageVisibilityBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { SqsRedelivery } from '../../adapters/aws/sqs-redelivery';
import { createHandler } from '../../app/stages/generate';
import type { RunStore } from '../../core/store';
import type { CloudFixture } from '../cloud/cloud-fixture';
import { planned, sqsEvent } from './handler-fixtures';

process.env.POWERTOOLS_METRICS_DISABLED = 'true';
const sqs = mockClient(SQSClient);
beforeEach(() => sqs.reset());
afterAll(() => sqs.restore());

const LANE_ARN = 'arn:aws:sqs:us-east-1:123456789012:rcb-openai-lane';

/** The fixture's store, failing every read of one task's completion (a DynamoDB 5xx the SDK gave up on). */
function faultyStore(store: RunStore, taskId: string): RunStore {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'getCompletions') {
        return async (ids: string[]) => {
          if (ids.includes(taskId)) throw new Error('InternalServerError: the store failed');
          return target.getCompletions(ids);
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

function handler(f: CloudFixture, store: RunStore) {
  return createHandler(() => ({
    store,
    blobs: f.blobs,
    cache: { get: async () => null, put: async () => undefined },
    scratchDir: f.scratchDir,
    keys: { get: async () => undefined },
    logger: new Logger({ logLevel: 'SILENT' }),
    metrics: new Metrics({ namespace: 'rcb-test' }),
    modelsFor: () => ({ clients: f.clients, costs: new Map() }),
    redelivery: new SqsRedelivery(new SQSClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } })),
  }));
}

const visibilityChanges = () =>
  sqs.commandCalls(ChangeMessageVisibilityBatchCommand).map((c) => ({
    queueUrl: c.args[0].input.QueueUrl,
    entries: c.args[0].input.Entries?.map((e) => [e.ReceiptHandle, e.VisibilityTimeout]),
  }));

describe('generate: redelivery backoff', () => {
  it.each([
    [1, 60],
    [2, 180],
    [4, 1620],
    [9, 3600],
  ])("hides a record failed on delivery %i for %i s, not the lane's hour", async (receiveCount, delaySec) => {
    sqs.on(ChangeMessageVisibilityBatchCommand).resolves({ Successful: [{ Id: '0' }], Failed: [] });
    const f = await planned();
    const [broken, fine] = f.queue.sent.map((m) => m.message);
    const response = await handler(
      f,
      faultyStore(f.store, broken.taskId),
    )(sqsEvent([JSON.stringify(broken), JSON.stringify(fine)], { queueArn: LANE_ARN, receiveCount }));
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm0' }] });
    expect(visibilityChanges()).toEqual([{ queueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/rcb-openai-lane', entries: [['rh0', delaySec]] }]);
    expect((await f.store.getCompletions([fine.taskId])).size).toBe(1);
  });

  it('hides a copy whose task is in flight elsewhere until any claim has lapsed (16 min)', async () => {
    const f = await planned();
    const [busy] = f.queue.sent.map((m) => m.message);
    expect(await f.store.claimGeneration(busy.taskId, 'other-instance', 60_000)).toBe(true);
    const response = await handler(f, f.store)(sqsEvent([JSON.stringify(busy)], { queueArn: LANE_ARN, receiveCount: 1 }));
    expect(response.batchItemFailures).toHaveLength(1);
    expect(visibilityChanges()[0].entries).toEqual([['rh0', 960]]);
  });

  it('still answers the batch when SQS refuses the change (the record keeps the full timeout)', async () => {
    sqs.on(ChangeMessageVisibilityBatchCommand).rejects(new Error('AccessDenied'));
    const f = await planned();
    const [broken] = f.queue.sent.map((m) => m.message);
    const response = await handler(f, faultyStore(f.store, broken.taskId))(sqsEvent([JSON.stringify(broken)], { queueArn: LANE_ARN, receiveCount: 1 }));
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm0' }] });
  });

  it('changes nothing when every record is answered', async () => {
    const f = await planned();
    const response = await handler(
      f,
      f.store,
    )(
      sqsEvent(
        f.queue.sent.map((m) => JSON.stringify(m.message)),
        { queueArn: LANE_ARN },
      ),
    );
    expect(response).toEqual({ batchItemFailures: [] });
    expect(visibilityChanges()).toEqual([]);
  });
});
