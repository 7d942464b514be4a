import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { batchContract } from './support/batch-contract';
import { startFakeBedrock } from '../../fakes/fake-batch-servers';
import { BEDROCK_BATCH, fakeEntry } from '../helpers/model-fixtures';

/** s3rver checks signatures against its one built-in account. */
const S3RVER = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
const BUCKET = BEDROCK_BATCH.bucket;
let s3Endpoint = '';

batchContract({
  name: 'Bedrock model invocation jobs (S3 in and out)',
  start: async (answer) => {
    const directory = mkdtempSync(join(tmpdir(), 'rcb-s3rver-'));
    const s3rver = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory });
    const { port } = await s3rver.run();
    s3Endpoint = `http://127.0.0.1:${port}`;
    const s3 = new S3Client({ region: 'us-east-1', endpoint: s3Endpoint, credentials: S3RVER, forcePathStyle: true });
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
    const server = await startFakeBedrock(answer, s3);
    return {
      ...server,
      close: async () => {
        await server.close();
        s3.destroy();
        await s3rver.close();
        rmSync(directory, { recursive: true, force: true });
      },
    };
  },
  entry: (url) => fakeEntry('bedrock', url),
  findsByIntent: true,
  // The contract reads these after start(), once s3rver's port is known. Bedrock's own
  // minimum of 100 records per job is lowered so the contract's small batches are accepted.
  get clientOptions() {
    return { aws: { region: 'us-east-1', credentials: S3RVER, s3Endpoint, batchMinRequests: 1 } };
  },
});
