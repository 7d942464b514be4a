/**
 * Every deployed stage's AWS SDK clients are captured by its Powertools Tracer
 * (`captureAWSv3Client`: each call an X-Ray subsegment), as each handler's dependencies are
 * built in AWS (app/stages/*.ts deployed*Deps, from the function's environment). Building
 * them calls no service. The model calls are traced by the lifecycle's traced client
 * (test/functions/stage-lifecycle.test.ts); their HTTP requests by Powertools' own https and
 * fetch instrumentation, on by default in the Tracer lambdaTelemetry builds.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SQSClient } from '@aws-sdk/client-sqs';
import { Tracer } from '@aws-lambda-powertools/tracer';
import * as aggregate from '../../app/stages/aggregate';
import * as batchRound from '../../app/stages/batch-round';
import * as checkProgress from '../../app/stages/check-progress';
import * as deadLetter from '../../app/stages/dead-letter';
import * as generate from '../../app/stages/generate';
import * as markFailed from '../../app/stages/mark-failed';
import * as planRun from '../../app/stages/plan-run';

/** What the stack sets in every function's environment, with stand-in names. */
const STORAGE = { AWS_REGION: 'us-east-1', RCB_TABLE: 'runs', RCB_BUCKET: 'artifacts' };
const KEYS = { RCB_KEYS_SECRET_ARN: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:keys' };

/** Each stage's deployed dependencies, built from the environment its function has, and the SDK clients it must capture. */
const STAGES: Array<[string, () => unknown, Array<new (...args: never[]) => unknown>]> = [
  [
    'plan-run',
    () =>
      planRun.deployedPlanRunDeps(
        planRun.loadConfig({
          ...STORAGE,
          RCB_LANE_QUEUES: JSON.stringify({ openai: 'https://sqs.us-east-1.amazonaws.com/123456789012/lane' }),
          RCB_TASK_DEFINITION: 'arn:aws:ecs:us-east-1:123456789012:task-definition/shard:1',
          RCB_EVALUATION_IMAGE: '123456789012.dkr.ecr.us-east-1.amazonaws.com/rcb@sha256:00',
        }),
      ),
    [DynamoDBClient, S3Client, SQSClient],
  ],
  // The generator's SQS client hands failed records back after a backoff (adapters/aws/sqs-redelivery.ts).
  ['generate', () => generate.deployedGenerateDeps(generate.loadConfig({ ...STORAGE, ...KEYS })), [DynamoDBClient, S3Client, SecretsManagerClient, SQSClient]],
  ['batch-round', () => batchRound.deployedBatchRoundDeps(batchRound.loadConfig({ ...STORAGE, ...KEYS })), [DynamoDBClient, S3Client, SecretsManagerClient]],
  ['dead-letter', () => deadLetter.deployedDeadLetterDeps(deadLetter.loadConfig({ ...STORAGE })), [DynamoDBClient, S3Client]],
  [
    'check-progress',
    () => checkProgress.deployedCheckProgressDeps(checkProgress.loadConfig({ ...STORAGE, RCB_GENERATION_TIMEOUT_SEC: '86400' })),
    [DynamoDBClient, S3Client],
  ],
  ['aggregate', () => aggregate.deployedAggregateDeps(aggregate.loadConfig({ ...STORAGE })), [DynamoDBClient, S3Client]],
  ['mark-failed', () => markFailed.deployedMarkFailedDeps(markFailed.loadConfig({ ...STORAGE })), [DynamoDBClient, S3Client]],
];

describe("the deployed stages' SDK clients are traced", () => {
  afterEach(() => jest.restoreAllMocks());

  it('covers the 7 Lambda stages', () => {
    expect(STAGES.map(([stage]) => stage).sort()).toEqual(['aggregate', 'batch-round', 'check-progress', 'dead-letter', 'generate', 'mark-failed', 'plan-run']);
  });

  it.each(STAGES)('%s: every AWS client it builds goes through its Tracer', (_stage, build, expected) => {
    const captured: unknown[] = [];
    const capture = jest.spyOn(Tracer.prototype, 'captureAWSv3Client').mockImplementation(function <T>(this: Tracer, client: T): T {
      captured.push(client);
      return client;
    });
    const deps = build() as { tracer?: unknown };
    expect(deps.tracer).toBeInstanceOf(Tracer);
    // Each capture is by the stage's own tracer.
    for (const call of capture.mock.contexts) expect(call).toBe(deps.tracer);
    const kinds = captured.map((c) => expected.find((k) => c instanceof k)?.name ?? (c as object).constructor.name);
    expect([...new Set(kinds)].sort()).toEqual(expected.map((k) => k.name).sort());
  });
});
