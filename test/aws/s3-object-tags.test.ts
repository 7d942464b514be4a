/**
 * The run's cost-allocation tag on every object the S3 adapter writes under `runs/<runId>/`,
 * read back with GetObjectTagging from moto's S3 server (s3rver stores objects but drops the
 * x-amz-tagging header, so it cannot show a tag): the tag is part of the PutObject, not a
 * second request. Runs where `moto_server` is on PATH, and always in CI.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { CreateBucketCommand, GetObjectTaggingCommand, type S3Client } from '@aws-sdk/client-s3';
import { createS3Client } from '../../adapters/aws/clients';
import { S3BlobStore, putJson } from '../../adapters/aws/s3-blob-store';
import { objectTags, OBJECT_TAGS, taggingHeader } from '../../core/cloud/object-tags';
import { cloudKeys } from '../../core/cloud/storage-layout';

const hasMoto = spawnSync('moto_server', ['--help'], { stdio: 'ignore' }).status === 0;

/** moto's server on a free port of 127.0.0.1; resolves with its endpoint once it listens. */
async function startMoto(): Promise<{ endpoint: string; child: ChildProcess }> {
  const child = spawn('moto_server', ['-H', '127.0.0.1', '-p', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const endpoint = await new Promise<string>((resolve, reject) => {
    let seen = '';
    const look = (d: Buffer) => {
      seen += d.toString();
      const m = /Running on (http:\/\/127\.0\.0\.1:\d+)/.exec(seen);
      if (m) resolve(m[1]);
    };
    child.stdout!.on('data', look);
    child.stderr!.on('data', look);
    child.once('exit', (code) => reject(new Error(`moto_server exited (${code}) before listening: ${seen.slice(-500)}`)));
  });
  return { endpoint, child };
}

describe('objectTags', () => {
  it("tags a run's keys with the run id, and nothing else", () => {
    expect(objectTags('runs/0123456789abcdef/plan.json')).toEqual({ 'rcb:run': '0123456789abcdef' });
    expect(objectTags('runs/0123456789abcdef/evaluation/p/verdicts.json')).toEqual({ 'rcb:run': '0123456789abcdef' });
    expect(objectTags('psets/abc.json')).toEqual({});
    // No run segment, or one S3 would refuse as a tag value: left untagged, never a failed write.
    expect(objectTags('runs/plan.json')).toEqual({});
    expect(objectTags('runs/a?b/plan.json')).toEqual({});
    expect(objectTags(`runs/${'a'.repeat(257)}/x`)).toEqual({});
    expect(taggingHeader({ 'rcb:run': 'r1' })).toBe('rcb%3Arun=r1');
    expect(taggingHeader({})).toBeUndefined();
  });
});

(hasMoto || process.env.CI ? describe : describe.skip)('S3BlobStore tags on a real S3 API (moto)', () => {
  let moto: { endpoint: string; child: ChildProcess };
  let s3: S3Client;
  const bucket = 'rcb-artifacts-tags';

  beforeAll(async () => {
    moto = await startMoto();
    s3 = createS3Client({ region: 'us-east-1', endpoint: moto.endpoint, forcePathStyle: true, credentials: { accessKeyId: 'moto', secretAccessKey: 'moto' } });
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  }, 60_000);

  afterAll(async () => {
    s3?.destroy();
    if (moto && moto.child.exitCode === null) {
      const exited = new Promise((resolve) => moto.child.once('exit', resolve));
      moto.child.kill('SIGTERM');
      await exited;
    }
  });

  const tagsOf = async (key: string) => (await s3.send(new GetObjectTaggingCommand({ Bucket: bucket, Key: key }))).TagSet ?? [];

  it("every object of a run carries the run's tag; a pset bundle none", async () => {
    const store = new S3BlobStore(s3, { bucket });
    const runId = '0123456789abcdef';
    const keys = [
      cloudKeys.planManifest(runId),
      cloudKeys.shardManifest(runId),
      cloudKeys.evaluationPin(runId),
      cloudKeys.infraErrors(runId),
      `${cloudKeys.reportPrefix(runId)}leaderboard.txt`,
      cloudKeys.shardVerdicts(runId, 'grouprms', 'model-a/0of2'),
      cloudKeys.verdictRecord(runId, 'task1', 'd1g3st'),
    ];
    for (const key of keys) await putJson(store, key, { key });
    await store.put(cloudKeys.psetBundle('abc'), 'bundle');

    for (const key of keys) expect(await tagsOf(key)).toEqual([{ Key: OBJECT_TAGS.run, Value: runId }]);
    expect(await tagsOf(cloudKeys.psetBundle('abc'))).toEqual([]);
  });

  it('a large object is tagged in its one PutObject too (a store under a run prefix)', async () => {
    // 16 MB in one request, past the SDK's default part size of a multipart upload (this store never uploads in parts).
    const store = new S3BlobStore(s3, { bucket, prefix: 'runs/fedcba9876543210/' });
    const big = Buffer.alloc(16 * 1024 * 1024, 'x');
    await store.put('evaluation/all/verdicts.json', big, 'application/json');
    expect(await tagsOf('runs/fedcba9876543210/evaluation/all/verdicts.json')).toEqual([{ Key: 'rcb:run', Value: 'fedcba9876543210' }]);
    expect((await store.get('evaluation/all/verdicts.json'))?.length).toBe(big.length);
  }, 120_000);
});
