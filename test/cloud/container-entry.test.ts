/**
 * The container entry point as the workflow runs it: a child process with only its
 * environment, against the real DynamoDB and S3 adapters on dynalite and s3rver, the real
 * executor, one shard of the bundled example.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoRunStore } from '../../adapters/aws/dynamo-run-store';
import { S3BlobStore } from '../../adapters/aws/s3-blob-store';
import { loadPset } from '../../core/pset/read-pset';
import { loadTemplate } from '../../core/prompt/template';
import { packageRoot, resourcePath } from '../../core/util/package-root';
import { runId as computeRunId } from '../../core/ids';
import type { RunSpec } from '../../core/records';
import { EmptyModel, OracleModel } from '../../adapters/models/offline';
import { uploadPromptTemplate, uploadPsetBundle } from '../../core/cloud/pset-bundle';
import { planCloudRun } from '../../core/cloud/plan-cloud-run';
import { generateTask } from '../../core/cloud/generate-task';
import { RunContextCache } from '../../core/cloud/run-context';
import { cloudKeys } from '../../core/cloud/payloads';
import { startDynalite, startS3rver, type LocalDynamo, type LocalS3 } from '../aws/local-servers';
import { EXAMPLE, ListQueue } from './cloud-fixture';

let dynamo: LocalDynamo;
let s3: LocalS3;
afterAll(async () => {
  await dynamo?.close();
  await s3?.close();
});

describe('container entry point', () => {
  it('evaluates one shard into the run store and the bucket, and exits 1 for a run that does not exist', async () => {
    // Prepare: a planned and generated run on the local servers.
    dynamo = await startDynalite();
    s3 = await startS3rver();
    const table = await dynamo.createTable();
    const bucket = await s3.createBucket();
    const store = new DynamoRunStore(dynamo.doc, { tableName: table });
    const blobs = new S3BlobStore(s3.s3, { bucket });
    const scratchDir = mkdtempSync(join(tmpdir(), 'rcb-container-test-'));
    const pset = loadPset(EXAMPLE, { papers: ['grouprms'] });
    const template = loadTemplate(resourcePath('prompt-template.txt'));
    const spec: RunSpec = {
      psetDigest: pset.digest,
      psetRoot: await uploadPsetBundle(blobs, pset),
      models: [
        { id: 'oracle', params: {} },
        { id: 'empty', params: {} },
      ],
      samples: 1,
      withPaper: true,
      papers: ['grouprms'],
      promptTemplateDigest: template.digest,
      timeoutSec: 60,
      budgetUsd: null,
    };
    await uploadPromptTemplate(blobs, readFileSync(resourcePath('prompt-template.txt'), 'utf8'));
    const runId = computeRunId(spec);
    const queue = new ListQueue();
    await planCloudRun({ store, blobs, queue, scratchDir }, { runId, spec, models: { oracle: { config: {} }, empty: { config: {} } } });
    const ctx = await new RunContextCache({ store, blobs, scratchDir }).get(runId);
    const clients = new Map<string, any>([
      ['oracle', new OracleModel(ctx.pset)],
      ['empty', new EmptyModel()],
    ]);
    for (const { message } of queue.sent) await generateTask({ store, clients }, ctx, message);
    const s3Endpoint = await s3.s3.config.endpoint!();
    // Test users (when this runs as root) must traverse the scratch dir, as the image's user owns /scratch.
    const scratch = mkdtempSync(join(tmpdir(), 'rcb-scratch-'));
    chmodSync(scratch, 0o755);
    const env = {
      PATH: process.env.PATH,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      RCB_TABLE: table,
      RCB_BUCKET: bucket,
      RCB_SCRATCH: scratch,
      RCB_DYNAMODB_ENDPOINT: dynamo.endpoint,
      RCB_S3_ENDPOINT: `${s3Endpoint.protocol}//${s3Endpoint.hostname}:${s3Endpoint.port}`,
      RCB_PYTHON: '/usr/bin/python3',
      RCB_JOBS: '2',
      RCB_SHARD: 'grouprms',
    };
    // Asynchronous: the local servers live in this process and must keep answering.
    const entry = (runIdEnv: string) =>
      new Promise<{ status: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, ['-r', 'tsx/cjs', join(packageRoot(), 'container', 'entry.ts')], {
          env: { ...env, RCB_RUN_ID: runIdEnv },
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr.setEncoding('utf8');
        child.stderr.on('data', (d: string) => (stderr += d));
        child.on('close', (status) => resolve({ status, stderr }));
      });

    // Act
    const ok = await entry(runId);
    const missing = await entry('no-such-run');

    // Assess
    expect(ok.stderr).toContain('shard evaluated');
    expect(ok.status).toBe(0);
    const verdicts = await store.listVerdicts(runId);
    expect(verdicts).toHaveLength(queue.sent.length);
    expect(verdicts.filter((v) => v.strictPass)).toHaveLength(queue.sent.length / 2);
    // The local runs' warm pool: the shard pays its workers' start-up once, not per test.
    expect(new Set(verdicts.map((v) => v.executor))).toEqual(new Set(['warm']));
    const shardFile = JSON.parse((await blobs.get(cloudKeys.shardVerdicts(runId, 'grouprms')))!.toString());
    expect(shardFile.verdicts).toHaveLength(queue.sent.length);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('no run no-such-run');
  });
});
