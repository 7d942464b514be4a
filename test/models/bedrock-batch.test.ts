import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { batchContract } from './support/batch-contract';
import { startFakeBedrock } from '../../fakes/fake-batch-servers';

/** s3rver checks signatures against its one built-in account. */
const S3RVER = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
const BUCKET = 'rcb-bedrock-batch';
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
  entry: (url) => ({
    id: 'fake-nova',
    provider: 'bedrock',
    model: 'us.amazon.nova-fake-v1:0',
    base_url: url,
    region: 'us-east-1',
    batch_s3_uri: `s3://${BUCKET}/rcb-batches`,
    batch_role_arn: 'arn:aws:iam::123456789012:role/rcb-bedrock-batch',
    params: { max_output_tokens: 2000, temperature: 0 },
    prices: {
      input: 0.8,
      cached_input: 0.2,
      output: 3.2,
      as_of: '2026-12-01',
      batch: { input: 0.4, cached_input: 0.1, output: 1.6, as_of: '2026-12-01', source: 'https://aws.amazon.com/bedrock/pricing/' },
    },
    knowledge_cutoff: '2024-10',
    context_window: 300000,
  }),
  findsByIntent: true,
  // The contract reads these after start(), once s3rver's port is known. Bedrock's own
  // minimum of 100 records per job is lowered so the contract's small batches are accepted.
  get clientOptions() {
    return { aws: { region: 'us-east-1', credentials: S3RVER, s3Endpoint, batchMinRequests: 1 } };
  },
});
