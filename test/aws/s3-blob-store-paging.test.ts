/** S3BlobStore paging through ListObjectsV2, with a mocked S3 client. */
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { createS3Client } from '../../adapters/aws/clients';
import { S3BlobStore } from '../../adapters/aws/s3-blob-store';

const s3Mock = mockClient(S3Client);
const s3 = createS3Client({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });

beforeEach(() => {
  s3Mock.reset();
});

afterAll(() => {
  s3Mock.restore();
});

describe('S3BlobStore.list', () => {
  it('follows continuation tokens until the listing is complete', async () => {
    s3Mock
      .on(ListObjectsV2Command)
      .resolvesOnce({ Contents: [{ Key: 'runs/r1/a' }, { Key: 'runs/r1/b' }], IsTruncated: true, NextContinuationToken: 'page-2' })
      .resolvesOnce({ Contents: [{ Key: 'runs/r1/c' }], IsTruncated: true, NextContinuationToken: 'page-3' })
      .resolvesOnce({ Contents: [{ Key: 'runs/r1/d' }], IsTruncated: false });
    const store = new S3BlobStore(s3, { bucket: 'artifacts', prefix: 'runs/', listPageSize: 2 });

    const keys = await store.list('r1/');

    expect(keys).toEqual(['r1/a', 'r1/b', 'r1/c', 'r1/d']);
    const inputs = s3Mock.commandCalls(ListObjectsV2Command).map((c) => c.args[0].input);
    expect(inputs.map((i) => i.ContinuationToken)).toEqual([undefined, 'page-2', 'page-3']);
    expect(inputs.every((i) => i.Prefix === 'runs/r1/' && i.MaxKeys === 2 && i.Bucket === 'artifacts')).toBe(true);
  });
});

describe('S3BlobStore.get', () => {
  it('surfaces access errors instead of reporting a missing blob', async () => {
    const denied = Object.assign(new Error('Access Denied'), { name: 'AccessDenied', $metadata: { httpStatusCode: 403 } });
    s3Mock.on(GetObjectCommand).rejects(denied);

    await expect(new S3BlobStore(s3, { bucket: 'artifacts' }).get('psets/x')).rejects.toThrow('Access Denied');
  });
});
