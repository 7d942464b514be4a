/**
 * The Redelivery port (core/cloud/redelivery.ts) on SQS: ChangeMessageVisibilityBatch, ten
 * entries a call, per queue. A record whose visibility cannot be changed is reported, not
 * thrown: it still comes back, after the lane's full visibility timeout.
 */
import { ChangeMessageVisibilityBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Redelivery, ReturnedRecord } from '../../core/cloud/redelivery';

/** A queue's URL from its ARN (`arn:<partition>:sqs:<region>:<account>:<name>`). */
export function queueUrlOfArn(arn: string, endpoint?: string): string {
  const parts = arn.split(':');
  if (parts.length !== 6 || parts[2] !== 'sqs') throw new Error(`not an SQS queue ARN: ${arn}`);
  const [, partition, , region, account, name] = parts;
  const host = endpoint ?? `https://sqs.${region}.${partition === 'aws-cn' ? 'amazonaws.com.cn' : 'amazonaws.com'}`;
  return `${host.replace(/\/$/, '')}/${account}/${name}`;
}

export class SqsRedelivery implements Redelivery {
  constructor(
    private readonly sqs: SQSClient,
    private readonly options: { endpoint?: string } = {},
  ) {}

  async returnAfter(records: readonly ReturnedRecord[]): Promise<Array<ReturnedRecord & { reason: string }>> {
    const byQueue = new Map<string, ReturnedRecord[]>();
    for (const r of records) byQueue.set(r.queueArn, [...(byQueue.get(r.queueArn) ?? []), r]);
    const failed: Array<ReturnedRecord & { reason: string }> = [];
    for (const [queueArn, list] of byQueue) {
      for (let i = 0; i < list.length; i += 10) failed.push(...(await this.changeBatch(queueArn, list.slice(i, i + 10))));
    }
    return failed;
  }

  private async changeBatch(queueArn: string, batch: ReturnedRecord[]): Promise<Array<ReturnedRecord & { reason: string }>> {
    try {
      const res = await this.sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: queueUrlOfArn(queueArn, this.options.endpoint),
          Entries: batch.map((r, i) => ({ Id: String(i), ReceiptHandle: r.receiptHandle, VisibilityTimeout: r.delaySec })),
        }),
      );
      return (res.Failed ?? []).map((f) => ({ ...batch[Number(f.Id)], reason: `${f.Code ?? 'Unknown'}: ${f.Message ?? 'no message'}` }));
    } catch (err) {
      return batch.map((r) => ({ ...r, reason: (err as Error).message }));
    }
  }
}
