/**
 * The BatchLedger contract, run against both ledgers: SQLite (a local run's rcb.sqlite) and
 * DynamoDB (the cloud batch lane's run table, on dynalite). A put replaces the record of its
 * key and keeps its place; a run's batches come back in the order first written, and only
 * that run's; a record too large for its store is refused before anything is submitted.
 */
import { join } from 'node:path';
import type { BatchLedger, BatchRecord } from '../../core/batch';
import { SqliteBatchLedger } from '../../adapters/local/sqlite-batch-ledger';
import { DynamoBatchLedger } from '../../adapters/aws/dynamo-batch-ledger';
import { DynamoRunStore } from '../../adapters/aws/dynamo-run-store';
import { runTableKey } from '../../core/cloud/storage-layout';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { tempDir } from '../helpers/cli';
import { startDynalite, type LocalDynamo } from './local-servers';

let local: LocalDynamo;
beforeAll(async () => {
  local = await startDynalite();
});
afterAll(() => local.close());

const record = (runId: string, batchKey: string, over: Partial<BatchRecord> = {}): BatchRecord => ({
  batchKey,
  runId,
  model: batchKey.split('#')[0],
  providerBatchId: null,
  taskIds: ['t1', 't2'],
  reservedUsd: 0.25,
  state: 'submitting',
  submittedAt: '2026-12-01T10:00:00.000Z',
  ...over,
});

const ledgers: Array<[string, () => Promise<BatchLedger>]> = [
  ['SQLite', async () => new SqliteBatchLedger(join(tempDir('rcb-ledger-'), 'rcb.sqlite'))],
  ['DynamoDB', async () => new DynamoBatchLedger(local.doc, { tableName: await local.createTable() })],
];

describe.each(ledgers)('the %s batch ledger', (_name, open) => {
  it('replaces a record by its key and keeps the order batches were first written in', async () => {
    // Prepare
    const ledger = await open();
    // Keys that sort otherwise than they were written: the order is the writes', not the keys'.
    await ledger.putBatch(record('run-a', 'm-b#10'));
    await ledger.putBatch(record('run-a', 'm-a#2'));
    await ledger.putBatch(record('run-b', 'm-a#1'));

    // Act: the first batch accepted, then ingested.
    await ledger.putBatch(record('run-a', 'm-b#10', { providerBatchId: 'batch_1', state: 'pending' }));
    await ledger.putBatch(
      record('run-a', 'm-b#10', { providerBatchId: 'batch_1', state: 'ingested', providerState: 'completed', endedAt: '2026-12-01T11:00:00.000Z' }),
    );

    // Assess
    const listed = await ledger.listBatches('run-a');
    expect(listed.map((b) => [b.batchKey, b.state, b.providerBatchId])).toEqual([
      ['m-b#10', 'ingested', 'batch_1'],
      ['m-a#2', 'submitting', null],
    ]);
    expect(listed[0]).toEqual(
      record('run-a', 'm-b#10', { providerBatchId: 'batch_1', state: 'ingested', providerState: 'completed', endedAt: '2026-12-01T11:00:00.000Z' }),
    );
    expect((await ledger.listBatches('run-b')).map((b) => b.batchKey)).toEqual(['m-a#1']);
    expect(await ledger.listBatches('run-c')).toEqual([]);
  });

  it('keeps optional fields (cancel requested, intent id) through a round trip', async () => {
    const ledger = await open();
    const b = record('run-x', 'm#1', { state: 'pending', providerBatchId: 'b-9', cancelRequested: true, providerState: 'in_progress' });
    await ledger.putBatch(b);
    expect(await ledger.listBatches('run-x')).toEqual([b]);
  });
});

describe('the DynamoDB batch ledger', () => {
  it('stores each batch under its run, beside the run store, where the storage layout says', async () => {
    // Prepare
    const tableName = await local.createTable();
    const store = new DynamoRunStore(local.doc, { tableName });
    const ledger = new DynamoBatchLedger(local.doc, { tableName });
    await ledger.putBatch(record('run-a', 'm#1'));

    // Act
    const item = await local.doc.send(new GetCommand({ TableName: tableName, Key: runTableKey.batch('run-a', 'm#1') }));

    // Assess: RUN#run-a / BATCH#m#1; the run store's listings do not see it.
    expect(item.Item?.pk).toBe('RUN#run-a');
    expect(item.Item?.sk).toBe('BATCH#m#1');
    expect(JSON.parse(item.Item!.record)).toEqual(record('run-a', 'm#1'));
    expect(await store.listTasks('run-a')).toEqual([]);
    expect(await store.listVerdicts('run-a')).toEqual([]);
  });

  it('refuses a record past the item limit, naming the batch, before the batch is submitted', async () => {
    const ledger = new DynamoBatchLedger(local.doc, { tableName: await local.createTable() });
    const taskIds = Array.from({ length: 12_000 }, (_, i) => `${i}`.padStart(32, '0'));
    await expect(ledger.putBatch(record('run-a', 'm#1', { taskIds }))).rejects.toThrow(/batch m#1 of run run-a \(12000 task ids\) is \d+ bytes serialized/);
  });
});
