/**
 * A verdict whose logs do not fit a DynamoDB item (1 MB of control characters, six bytes
 * each once JSON-escaped) is stored: its full record in S3 under a content key, the item a
 * pointer and the verdict without its log texts, far under 400 KB; read back whole.
 * dynalite and s3rver, the real APIs.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoRunStore, ItemTooLargeError, runTableKey } from '../../adapters/aws/dynamo-run-store';
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

const controlCharacters = (n: number): string => Array.from({ length: n }, (_, i) => String.fromCharCode(1 + (i % 30))).join('');

describe('DynamoRunStore with a verdict larger than an item', () => {
  it('keeps the full record in the bucket and a pointer in the item, and reads it back whole', async () => {
    // Prepare
    const tableName = await dynamo.createTable();
    const blobs = new S3BlobStore(s3.s3, { bucket: await s3.createBucket() });
    const store = new DynamoRunStore(dynamo.doc, { tableName, blobs });
    const big = makeVerdict('task-big', {
      officialPass: false,
      strictPass: false,
      failureClass: 'runtime',
      stdout: { text: controlCharacters(1024 * 1024), totalBytes: 1024 * 1024, truncated: false },
      stderr: { text: `Traceback\n${controlCharacters(4096)}`, totalBytes: 4106, truncated: false },
    });
    const small = makeVerdict('task-small');

    // Act
    const stored = await store.putVerdict('run-1', big);
    const again = await store.putVerdict('run-1', { ...big, officialPass: true });
    await store.putVerdict('run-1', small);

    // Assess
    expect([stored, again]).toEqual([true, false]);
    expect(await store.listVerdicts('run-1')).toEqual([big, small]);
    const item = (await dynamo.doc.send(new GetCommand({ TableName: tableName, Key: runTableKey.verdict('run-1', 'task-big') }))).Item!;
    expect(Buffer.byteLength(JSON.stringify(item))).toBeLessThan(8 * 1024);
    expect(item.verdictBlob).toMatch(/^runs\/run-1\/evaluation\/verdicts\/task-big-[0-9a-f]{16}\.json$/);
    expect(JSON.parse(item.verdict as string)).toMatchObject({ officialPass: false, failureClass: 'runtime', stdout: { text: '', totalBytes: 1024 * 1024 } });
    expect(JSON.parse((await blobs.get(item.verdictBlob as string))!.toString())).toEqual(big);
    const smallItem = (await dynamo.doc.send(new GetCommand({ TableName: tableName, Key: runTableKey.verdict('run-1', 'task-small') }))).Item!;
    expect([smallItem.verdictBlob, typeof smallItem.verdict]).toEqual([undefined, 'string']);
  });

  it('without a blob store refuses it, naming the task', async () => {
    const store = new DynamoRunStore(dynamo.doc, { tableName: await dynamo.createTable() });
    const big = makeVerdict('task-big', { stdout: { text: controlCharacters(1024 * 1024), totalBytes: 1024 * 1024, truncated: false } });
    await expect(store.putVerdict('run-1', big)).rejects.toThrow(ItemTooLargeError);
    await expect(store.putVerdict('run-1', big)).rejects.toThrow(/verdict of task task-big in run run-1/);
  });
});
