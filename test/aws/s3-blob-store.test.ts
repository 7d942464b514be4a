/** S3BlobStore and the JSON helpers against s3rver. */
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { z } from 'zod';
import { S3BlobStore, getJson, putJson } from '../../adapters/aws/s3-blob-store';
import { startS3rver, type LocalS3 } from './local-servers';

let local: LocalS3;
let bucket: string;

beforeAll(async () => {
  local = await startS3rver();
});

afterAll(async () => {
  await local.close();
});

beforeEach(async () => {
  bucket = await local.createBucket();
});

describe('S3BlobStore', () => {
  it('put then get returns the same bytes, with the content type given', async () => {
    const store = new S3BlobStore(local.s3, { bucket });
    const bytes = Buffer.from([0, 1, 2, 250, 255]);

    await store.put('runs/r1/blob.bin', bytes, 'application/x-test');
    await store.put('runs/r1/prompt.txt', 'naïve prompt ✓');

    expect(await store.get('runs/r1/blob.bin')).toEqual(bytes);
    expect((await store.get('runs/r1/prompt.txt'))?.toString('utf8')).toBe('naïve prompt ✓');
    const head = await local.s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'runs/r1/blob.bin' }));
    expect(head.ContentType).toBe('application/x-test');
  });

  it('get of a missing key is null', async () => {
    const store = new S3BlobStore(local.s3, { bucket });

    expect(await store.get('runs/none/missing.json')).toBeNull();
  });

  it('get from a missing bucket is an error, not a missing blob', async () => {
    const store = new S3BlobStore(local.s3, { bucket: 'rcb-no-such-bucket' });

    await expect(store.get('anything')).rejects.toMatchObject({ name: 'NoSuchBucket' });
  });

  // s3rver's continuation tokens use DES, which Node 20's OpenSSL refuses, so paging is
  // pinned in s3-blob-store-paging.test.ts with a mocked client; here one page.
  it('list returns the keys under the prefix only', async () => {
    const store = new S3BlobStore(local.s3, { bucket });
    const keys = Array.from({ length: 25 }, (_, i) => `runs/r1/logs/${String(i).padStart(2, '0')}.txt`);
    for (const key of keys) await store.put(key, key);
    await store.put('runs/r2/logs/00.txt', 'other run');
    await store.put('runs/r10/logs/00.txt', 'prefix lookalike');

    expect(await store.list('runs/r1/')).toEqual(keys);
    expect(await store.list('runs/r3/')).toEqual([]);
  });

  it('a store with a prefix reads, writes and lists relative to it', async () => {
    const scoped = new S3BlobStore(local.s3, { bucket, prefix: 'runs/r9/' });
    const whole = new S3BlobStore(local.s3, { bucket });

    await scoped.put('report.md', '# report', 'text/markdown');

    expect((await whole.get('runs/r9/report.md'))?.toString()).toBe('# report');
    expect(await scoped.list('')).toEqual(['report.md']);
  });
});

describe('JSON blobs', () => {
  const summary = z.object({ runId: z.string(), passed: z.number() }).strict();

  it('putJson then getJson round-trips, validated by a schema', async () => {
    const store = new S3BlobStore(local.s3, { bucket });

    await putJson(store, 'runs/r1/summary.json', { runId: 'r1', passed: 3 });

    expect(await getJson(store, 'runs/r1/summary.json', summary)).toEqual({ runId: 'r1', passed: 3 });
    const head = await local.s3.send(new GetObjectCommand({ Bucket: bucket, Key: 'runs/r1/summary.json' }));
    expect(head.ContentType).toBe('application/json');
  });

  it('getJson of a missing key is null', async () => {
    expect(await getJson(new S3BlobStore(local.s3, { bucket }), 'nope.json', summary)).toBeNull();
  });

  it('getJson names the key when the blob is not JSON or does not match the schema', async () => {
    const store = new S3BlobStore(local.s3, { bucket });
    await store.put('bad.json', '{not json');
    await putJson(store, 'wrong.json', { runId: 'r1', passed: 'three' });

    await expect(getJson(store, 'bad.json')).rejects.toThrow(/blob bad\.json is not JSON/);
    await expect(getJson(store, 'wrong.json', summary)).rejects.toThrow(/blob wrong\.json does not match its schema: passed/);
  });
});
