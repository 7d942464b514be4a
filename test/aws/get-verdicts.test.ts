/**
 * RunStore.getVerdicts on both stores (SQLite, and DynamoDB on dynalite): the run's verdicts on
 * the tasks asked for, by task id, in the order asked; tasks without one and other runs'
 * verdicts are left out. On DynamoDB it is BatchGetItem of those items (an evaluation shard
 * reads its own few verdicts, never a Query of the run's), 100 keys a request, and a verdict
 * kept in the bucket for its size comes back whole.
 */
import { BatchGetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { RunStore } from '../../core/store';
import { SqliteRunStore } from '../../adapters/local/sqlite-store';
import { DynamoRunStore } from '../../adapters/aws/dynamo-run-store';
import { S3BlobStore } from '../../adapters/aws/s3-blob-store';
import { startDynalite, startS3rver, type LocalDynamo, type LocalS3 } from './local-servers';
import { makeVerdict } from './records';

let dynamo: LocalDynamo;
let s3: LocalS3;
beforeAll(async () => {
  dynamo = await startDynalite();
  s3 = await startS3rver();
});
afterAll(async () => {
  await dynamo.close();
  await s3.close();
});

const stores: Array<[string, () => Promise<RunStore>]> = [
  ['SQLite', async () => new SqliteRunStore(':memory:')],
  ['DynamoDB', async () => new DynamoRunStore(dynamo.doc, { tableName: await dynamo.createTable() })],
];

describe.each(stores)('getVerdicts on the %s store', (_name, open) => {
  it("returns the run's verdicts on the tasks asked for, in their order, and nothing else", async () => {
    // Prepare
    const store = await open();
    const a = makeVerdict('t-a');
    const b = makeVerdict('t-b', { officialPass: false, strictPass: false, failureClass: 'functional', exitCode: 1 });
    await store.putVerdict('run-1', a);
    await store.putVerdict('run-1', b);
    await store.putVerdict('run-1', makeVerdict('t-other'));
    await store.putVerdict('run-2', makeVerdict('t-c'));

    // Act
    const got = await store.getVerdicts('run-1', ['t-b', 't-none', 't-a', 't-c', 't-b']);

    // Assess
    expect([...got.entries()]).toEqual([
      ['t-b', b],
      ['t-a', a],
    ]);
    expect((await store.getVerdicts('run-1', [])).size).toBe(0);
  });
});

describe('getVerdicts on DynamoDB', () => {
  it('reads the items by key, 100 a request, never a Query of the run', async () => {
    // Prepare
    const store = new DynamoRunStore(dynamo.doc, { tableName: await dynamo.createTable() });
    const ids = Array.from({ length: 230 }, (_, i) => `t${String(i).padStart(3, '0')}`);
    for (const id of ids.slice(0, 150)) await store.putVerdict('run-1', makeVerdict(id));
    const send = jest.spyOn(dynamo.doc, 'send');

    // Act
    const got = await store.getVerdicts('run-1', ids);

    // Assess
    const commands = send.mock.calls.map(([command]) => command);
    send.mockRestore();
    expect(commands.filter((c) => c instanceof QueryCommand)).toHaveLength(0);
    expect(commands.filter((c) => c instanceof BatchGetCommand)).toHaveLength(3);
    expect([...got.keys()]).toEqual(ids.slice(0, 150));
  });

  it('reads a verdict kept in the bucket back whole', async () => {
    // Prepare
    const blobs = new S3BlobStore(s3.s3, { bucket: await s3.createBucket() });
    const store = new DynamoRunStore(dynamo.doc, { tableName: await dynamo.createTable(), blobs });
    const text = 'x'.repeat(300 * 1024);
    const big = makeVerdict('t-big', { stdout: { text, totalBytes: text.length, truncated: false } });
    await store.putVerdict('run-1', big);

    // Act
    const got = await store.getVerdicts('run-1', ['t-big']);

    // Assess
    expect(got.get('t-big')).toEqual(big);
  });
});
