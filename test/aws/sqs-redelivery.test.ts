/** SqsRedelivery over a mocked SQS client, and the backoff it is given. */
import { ChangeMessageVisibilityBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { SqsRedelivery, queueUrlOfArn } from '../../adapters/aws/sqs-redelivery';
import { redeliveryDelaySec } from '../../core/cloud/redelivery';

const sqs = mockClient(SQSClient);
beforeEach(() => sqs.reset());
afterAll(() => sqs.restore());
const client = () => new SQSClient({ region: 'eu-west-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });

describe('redeliveryDelaySec', () => {
  it('grows by three per delivery from a minute, capped at the hour, never past SQS 12 h', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => redeliveryDelaySec(n))).toEqual([60, 180, 540, 1620, 3600, 3600]);
    expect(redeliveryDelaySec(Number.NaN)).toBe(60);
    expect(redeliveryDelaySec(40, { baseSec: 60, factor: 3, capSec: 1e9 })).toBe(43_200);
  });
});

describe('SqsRedelivery', () => {
  it('derives queue URLs from ARNs (and a local endpoint)', () => {
    expect(queueUrlOfArn('arn:aws:sqs:eu-west-1:111122223333:q')).toBe('https://sqs.eu-west-1.amazonaws.com/111122223333/q');
    expect(queueUrlOfArn('arn:aws:sqs:eu-west-1:111122223333:q', 'http://127.0.0.1:9324/')).toBe('http://127.0.0.1:9324/111122223333/q');
    expect(() => queueUrlOfArn('arn:aws:sns:eu-west-1:1:q')).toThrow('not an SQS queue ARN');
  });

  it('changes visibility ten records a call, per queue, and reports the entries SQS refused', async () => {
    sqs.on(ChangeMessageVisibilityBatchCommand).callsFake((input) => ({
      Successful: [],
      Failed: input.Entries[0].ReceiptHandle === 'a0' ? [{ Id: '3', Code: 'ReceiptHandleIsInvalid', Message: 'stale', SenderFault: true }] : [],
    }));
    const records = [
      ...Array.from({ length: 12 }, (_, i) => ({ queueArn: 'arn:aws:sqs:eu-west-1:1:a', receiptHandle: `a${i}`, delaySec: 60 })),
      { queueArn: 'arn:aws:sqs:eu-west-1:1:b', receiptHandle: 'b0', delaySec: 180 },
    ];
    const refused = await new SqsRedelivery(client()).returnAfter(records);
    const calls = sqs.commandCalls(ChangeMessageVisibilityBatchCommand).map((c) => [c.args[0].input.QueueUrl, c.args[0].input.Entries?.length]);
    expect(calls).toEqual([
      ['https://sqs.eu-west-1.amazonaws.com/1/a', 10],
      ['https://sqs.eu-west-1.amazonaws.com/1/a', 2],
      ['https://sqs.eu-west-1.amazonaws.com/1/b', 1],
    ]);
    expect(refused).toEqual([{ ...records[3], reason: 'ReceiptHandleIsInvalid: stale' }]);
  });
});
