/**
 * The emulator's AWS: dynalite (DynamoDB) and s3rver (S3) in this process on 127.0.0.1
 * random ports, with a table laid out as infra's StorageConstruct lays it out and one bucket.
 * Clients use fake credentials, never the environment's.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, HeadBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDynamoDocumentClient, createS3Client, type AwsStaticCredentials } from '../adapters/aws/clients';
import { createRunTable } from '../adapters/aws/run-table';
import type { StorageConfig } from '../adapters/aws/runtime/cloud-config';
import { emptyUsage, meterDynamoServer, meterS3Server, type MeteredUsage } from './usage-meter';

/** s3rver checks request signatures against its one built-in account; dynalite accepts any. */
export const LOCAL_CREDENTIALS: AwsStaticCredentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
const REGION = 'us-east-1';

interface S3rverServer {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}

// Neither server ships type declarations; these are the calls used.
type DynaliteFactory = (options: { createTableMs?: number; path?: string }) => Server;
type S3rverClass = new (options: { port: number; address: string; silent: boolean; directory: string }) => S3rverServer;

export interface LocalAws {
  storage: StorageConfig;
  credentials: AwsStaticCredentials;
  doc: DynamoDBDocumentClient;
  s3: S3Client;
  /** What the flow asked of DynamoDB and S3 so far (with `meter`). */
  usage?: MeteredUsage;
  /** Environment that points a child process (the container entry) at these servers. */
  childEnv(): Record<string, string>;
  close(): Promise<void>;
}

export interface LocalAwsOptions {
  scratchDir: string;
  table?: string;
  bucket?: string;
  /**
   * Folders that keep the table (dynalite's on-disk store) and the bucket (s3rver's files)
   * after close (emulator-state.ts); the table and bucket are made only if missing.
   * @default both in memory or a temporary folder, gone at close
   */
  keep?: { dynamoDir: string; s3Dir: string };
  /** Count requests and capacity units as AWS bills them (emulator/usage-meter.ts). @default false */
  meter?: boolean;
}

export async function startLocalAws(options: LocalAwsOptions): Promise<LocalAws> {
  const dynalite = require('dynalite') as DynaliteFactory;
  const S3rver = require('s3rver') as S3rverClass;
  if (options.keep) {
    mkdirSync(options.keep.dynamoDir, { recursive: true });
    mkdirSync(options.keep.s3Dir, { recursive: true });
  }
  const dynamoServer = dynalite({ createTableMs: 0, ...(options.keep ? { path: options.keep.dynamoDir } : {}) });
  await new Promise<void>((resolve) => dynamoServer.listen(0, '127.0.0.1', resolve));
  const usage = options.meter ? emptyUsage() : undefined;
  const meters: Server[] = [];
  let dynamoEndpoint = `http://127.0.0.1:${(dynamoServer.address() as AddressInfo).port}`;
  if (usage) {
    const proxy = await meterDynamoServer(dynamoServer.address() as AddressInfo, usage);
    meters.push(proxy.server);
    dynamoEndpoint = proxy.endpoint;
  }
  const s3Directory = options.keep?.s3Dir ?? mkdtempSync(join(tmpdir(), 'rcb-emulate-s3-'));
  const s3Server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: s3Directory });
  const s3Address = await s3Server.run();
  let s3Endpoint = `http://127.0.0.1:${s3Address.port}`;
  if (usage) {
    const proxy = await meterS3Server(s3Address, usage);
    meters.push(proxy.server);
    s3Endpoint = proxy.endpoint;
  }

  const table = options.table ?? 'rcb-runs';
  const bucket = options.bucket ?? 'rcb-artifacts';
  const raw = new DynamoDBClient({ region: REGION, endpoint: dynamoEndpoint, credentials: LOCAL_CREDENTIALS });
  const doc = createDynamoDocumentClient({ region: REGION, endpoint: dynamoEndpoint, credentials: LOCAL_CREDENTIALS });
  const s3 = createS3Client({ region: REGION, endpoint: s3Endpoint, credentials: LOCAL_CREDENTIALS, forcePathStyle: true });
  const tableExists = options.keep
    ? await raw.send(new DescribeTableCommand({ TableName: table })).then(
        () => true,
        () => false,
      )
    : false;
  if (!tableExists) await createRunTable(raw, table);
  const bucketExists = options.keep
    ? await s3.send(new HeadBucketCommand({ Bucket: bucket })).then(
        () => true,
        () => false,
      )
    : false;
  if (!bucketExists) await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  // The table and bucket are the stack's, not the run's: counting starts after them.
  if (usage) Object.assign(usage, emptyUsage());

  const storage: StorageConfig = { region: REGION, table, bucket, dynamoEndpoint, s3Endpoint, scratchDir: options.scratchDir };
  return {
    storage,
    credentials: LOCAL_CREDENTIALS,
    doc,
    s3,
    ...(usage ? { usage } : {}),
    childEnv: () => ({
      AWS_REGION: REGION,
      AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
      RCB_TABLE: table,
      RCB_BUCKET: bucket,
      RCB_DYNAMODB_ENDPOINT: dynamoEndpoint,
      RCB_S3_ENDPOINT: s3Endpoint,
    }),
    async close() {
      doc.destroy();
      raw.destroy();
      s3.destroy();
      for (const m of meters) {
        m.closeAllConnections();
        await new Promise<void>((resolve) => m.close(() => resolve()));
      }
      await new Promise<void>((resolve, reject) => dynamoServer.close((err) => (err ? reject(err) : resolve())));
      await s3Server.close();
      if (!options.keep) rmSync(s3Directory, { recursive: true, force: true });
    },
  };
}
