/**
 * The AWS adapters a cloud function or the container uses, built from its StorageConfig.
 * Storage only: the SQS lanes (lane-task-queue.ts) route by provider, which imports every
 * provider's SDK, and the evaluation container and most functions send no message.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import { createDynamoDocumentClient, createS3Client, type AwsStaticCredentials, type ClientTracer } from '../clients';
import { DynamoCompletionCache, DynamoRunStore } from '../dynamo-run-store';
import { DynamoBatchLedger } from '../dynamo-batch-ledger';
import type { BatchLedger } from '../../../core/batch';
import { S3BlobStore } from '../s3-blob-store';
import type { BlobStore, CompletionCache, RunStore } from '../../../core/store';
import type { EnvironmentChecks, RunCounters } from '../../../core/cloud/ports';
import { DynamoEnvironmentChecks } from '../dynamo-environment-checks';
import { DynamoLaneStateStore } from '../dynamo-lane-throttle';
import type { LaneStateStore } from '../../../core/lane-throttle';
import type { StorageConfig } from './cloud-config';

export interface StorageAdapters {
  store: RunStore;
  blobs: BlobStore;
  cache: CompletionCache;
  /** Progress counters on the run item (the same DynamoDB store). */
  counters?: RunCounters;
  /** The batch lane's ledger of submitted batches (the same table). */
  ledger?: BatchLedger;
  /** The shards' environment checks, per image and per run (the same table). */
  environments?: EnvironmentChecks;
  /** The provider lanes' shared throttles, one item per lane (the same table). */
  laneStates?: LaneStateStore;
  scratchDir: string;
}

/**
 * The storage adapters of a configuration. `clients` replaces the SDK clients (tests), or
 * gives those built here credentials and a tracer (a deployed function's: their calls become
 * X-Ray subsegments).
 */
export function createStorageAdapters(
  config: StorageConfig,
  clients: { doc?: DynamoDBDocumentClient; s3?: S3Client; credentials?: AwsStaticCredentials; tracer?: ClientTracer } = {},
): StorageAdapters {
  const { credentials, tracer } = clients;
  const doc = clients.doc ?? createDynamoDocumentClient({ region: config.region, endpoint: config.dynamoEndpoint, credentials, tracer });
  const s3 = clients.s3 ?? createS3Client({ region: config.region, endpoint: config.s3Endpoint, forcePathStyle: !!config.s3Endpoint, credentials, tracer });
  const blobs = new S3BlobStore(s3, { bucket: config.bucket });
  // Verdicts too large for an item keep their full record in the bucket.
  const store = new DynamoRunStore(doc, { tableName: config.table, blobs });
  return {
    store,
    counters: store,
    blobs,
    cache: new DynamoCompletionCache(doc, { tableName: config.table }),
    ledger: new DynamoBatchLedger(doc, { tableName: config.table }),
    environments: new DynamoEnvironmentChecks(doc, { tableName: config.table }),
    laneStates: new DynamoLaneStateStore(doc, { tableName: config.table }),
    scratchDir: config.scratchDir,
  };
}
