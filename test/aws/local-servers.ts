/**
 * dynalite and s3rver in-process on 127.0.0.1 random ports, with clients built by the
 * adapters' own factories (fake credentials, never the environment).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import type { S3Client } from '@aws-sdk/client-s3';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import dynalite from 'dynalite';
import S3rver from 's3rver';
import { createDynamoDocumentClient, createS3Client } from '../../adapters/aws/clients';
import { createRunTable } from '../../adapters/aws/run-table';

const REGION = 'us-east-1';
const FAKE_CREDENTIALS = { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret' };
/** s3rver checks signatures against its one built-in (fake) account. */
const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export interface LocalDynamo {
  endpoint: string;
  doc: DynamoDBDocumentClient;
  /** Creates a table with the layout of infra's StorageConstruct; returns its name. */
  createTable(): Promise<string>;
  close(): Promise<void>;
}

let tableCount = 0;

export async function startDynalite(): Promise<LocalDynamo> {
  const server = dynalite({ createTableMs: 0 });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const config = { region: REGION, endpoint, credentials: FAKE_CREDENTIALS };
  const doc = createDynamoDocumentClient(config);
  const raw = new DynamoDBClient(config);
  return {
    endpoint,
    doc,
    async createTable() {
      const name = `rcb-runs-${++tableCount}`;
      await createRunTable(raw, name);
      return name;
    },
    async close() {
      doc.destroy();
      raw.destroy();
      await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}

export interface LocalS3 {
  s3: S3Client;
  createBucket(): Promise<string>;
  close(): Promise<void>;
}

let bucketCount = 0;

export async function startS3rver(): Promise<LocalS3> {
  const directory = mkdtempSync(join(tmpdir(), 'rcb-s3rver-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory });
  const { port } = await server.run();
  const s3 = createS3Client({ region: REGION, endpoint: `http://127.0.0.1:${port}`, credentials: S3RVER_CREDENTIALS, forcePathStyle: true });
  return {
    s3,
    async createBucket() {
      const name = `rcb-artifacts-${++bucketCount}`;
      await s3.send(new CreateBucketCommand({ Bucket: name }));
      return name;
    },
    async close() {
      s3.destroy();
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
