/**
 * The BatchLedger on the run table (DynamoDB), for the cloud batch lane: one item per batch
 * under its run (`RUN#<runId>` / `BATCH#<batchKey>`, core/cloud/storage-layout.ts), the
 * record as JSON. Same contract as the SQLite ledger (adapters/local/sqlite-batch-ledger.ts):
 * a put replaces the record of its key, and a run's batches are listed in the order they
 * were first written, which the lane's rounds (separate Lambda invocations) rely on to number
 * new batches and to find the ones an earlier round left pending.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { BatchLedger, BatchRecord } from '../../core/batch';
import { BATCH_ATTRIBUTES, KEY_PREFIXES, TABLE_ATTRIBUTES, runTableKey } from '../../core/cloud/storage-layout';
import { ItemTooLargeError } from './dynamo-run-store';

/** DynamoDB's item limit, less room for the keys and the other attributes. */
const MAX_RECORD_BYTES = 390 * 1024;

export interface DynamoBatchLedgerOptions {
  tableName: string;
  /** Days after which a batch item expires with its run's items (the table's TTL attribute). @default no expiry */
  runTtlDays?: number;
  /** @default () => new Date() */
  now?: () => Date;
}

export class DynamoBatchLedger implements BatchLedger {
  private readonly table: string;
  private readonly now: () => Date;
  /** Breaks ties between two first writes in the same millisecond of this instance. */
  private tick = 0;

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly options: DynamoBatchLedgerOptions,
  ) {
    this.table = options.tableName;
    this.now = options.now ?? (() => new Date());
  }

  async putBatch(b: BatchRecord): Promise<void> {
    const record = JSON.stringify(b);
    const bytes = Buffer.byteLength(record);
    // A record too large to store would leave a submitted batch unrecorded: refused before the submit.
    if (bytes > MAX_RECORD_BYTES) throw new ItemTooLargeError(`batch ${b.batchKey} of run ${b.runId} (${b.taskIds.length} task ids)`, bytes);
    const now = this.now();
    // The first write fixes the batch's place in the run's order; later writes keep it.
    const seq = now.getTime() * 1000 + (this.tick++ % 1000);
    const ttl = this.options.runTtlDays ? Math.floor(now.getTime() / 1000) + this.options.runTtlDays * 86_400 : undefined;
    await this.doc.send(
      new UpdateCommand({
        TableName: this.table,
        Key: runTableKey.batch(b.runId, b.batchKey),
        UpdateExpression: `SET #record = :record, #seq = if_not_exists(#seq, :seq)${ttl ? ', #ttl = :ttl' : ''}`,
        ExpressionAttributeNames: {
          '#record': BATCH_ATTRIBUTES.record,
          '#seq': BATCH_ATTRIBUTES.seq,
          ...(ttl ? { '#ttl': TABLE_ATTRIBUTES.ttlAttribute } : {}),
        },
        ExpressionAttributeValues: { ':record': record, ':seq': seq, ...(ttl ? { ':ttl': ttl } : {}) },
      }),
    );
  }

  async listBatches(runId: string): Promise<BatchRecord[]> {
    const items: Array<{ record: string; seq: number }> = [];
    let start: Record<string, unknown> | undefined;
    do {
      const res = await this.doc.send(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :prefix)',
          ExpressionAttributeNames: { '#pk': TABLE_ATTRIBUTES.partitionKey, '#sk': TABLE_ATTRIBUTES.sortKey },
          ExpressionAttributeValues: { ':pk': runTableKey.run(runId).pk, ':prefix': KEY_PREFIXES.batch },
          // A round must see what the previous round wrote (it decides what is still pending).
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of res.Items ?? []) items.push({ record: String(item[BATCH_ATTRIBUTES.record]), seq: Number(item[BATCH_ATTRIBUTES.seq]) });
      start = res.LastEvaluatedKey;
    } while (start);
    return items.sort((a, b) => a.seq - b.seq).map((i) => JSON.parse(i.record) as BatchRecord);
  }
}
