/**
 * SDK clients built from an explicit configuration. Nothing here reads the environment:
 * the handler or the container reads and checks its configuration once and passes it in,
 * and tests pass local endpoints and fake credentials directly. When `credentials` is
 * absent the SDK's default provider chain applies (the Lambda or ECS task role). With a
 * `tracer` (a deployed function's Powertools Tracer), every call of the client is an X-Ray
 * subsegment.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { S3Client } from '@aws-sdk/client-s3';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** Static credentials, e.g. the fake ones local servers accept. */
export interface AwsStaticCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface AwsClientConfig {
  region: string;
  /**
   * Endpoint of a local server (dynalite, s3rver, LocalStack).
   * @default the AWS endpoint of the region
   */
  endpoint?: string;
  /** @default the SDK's default provider chain */
  credentials?: AwsStaticCredentials;
  /**
   * Attempts per request, the first included (the SDK retries throttling and 5xx itself).
   * @default the SDK default (3)
   */
  maxAttempts?: number;
  /**
   * Records the client's calls (Powertools' `Tracer.captureAWSv3Client`; a no-op where
   * tracing is off).
   * @default none
   */
  tracer?: ClientTracer;
}

/** What a client takes of a tracer: its AWS SDK v3 capture. */
export interface ClientTracer {
  captureAWSv3Client<T>(client: T): T;
}

/** The client, captured by the config's tracer if it has one. */
function traced<T>(config: AwsClientConfig, client: T): T {
  return config.tracer ? config.tracer.captureAWSv3Client(client) : client;
}

export interface S3ClientConfig extends AwsClientConfig {
  /**
   * Path-style addressing (`http://host/bucket/key`), which local S3 servers need.
   * @default false
   */
  forcePathStyle?: boolean;
}

function base(config: AwsClientConfig) {
  return {
    region: config.region,
    ...(config.endpoint ? { endpoint: config.endpoint } : {}),
    ...(config.credentials ? { credentials: config.credentials } : {}),
    ...(config.maxAttempts ? { maxAttempts: config.maxAttempts } : {}),
  };
}

/**
 * A DynamoDB document client. Undefined members of records are dropped (optional fields
 * such as `error?`), as JSON.stringify would drop them.
 */
export function createDynamoDocumentClient(config: AwsClientConfig): DynamoDBDocumentClient {
  // Captured before the document client wraps it: the document client shares its middleware stack.
  return DynamoDBDocumentClient.from(traced(config, new DynamoDBClient(base(config))), {
    marshallOptions: { removeUndefinedValues: true },
  });
}

export function createS3Client(config: S3ClientConfig): S3Client {
  return traced(config, new S3Client({ ...base(config), forcePathStyle: config.forcePathStyle ?? false }));
}

export function createSqsClient(config: AwsClientConfig): SQSClient {
  return traced(config, new SQSClient(base(config)));
}

export function createSecretsManagerClient(config: AwsClientConfig): SecretsManagerClient {
  return traced(config, new SecretsManagerClient(base(config)));
}

export function createEventBridgeClient(config: AwsClientConfig): EventBridgeClient {
  return traced(config, new EventBridgeClient(base(config)));
}
