import { Aws, Duration, Stack } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambdaEventSources from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { DEFAULT_LANES, type BedrockBatchConfig, type LaneConfig, validateLanes } from './config';
import type { RcbFunction } from './rcb-function';
import { createStageFunctions, requiredStageFunction, type StageFunctionSettings } from './stage-functions';
import { CLOUD_STAGES, queueConsumer, type StageName, type StageTable } from '../app/stages';
import { DEPLOYED_MODELS_FILE } from '../core/cloud/bundle-resources';
import { ARTIFACT_PATTERNS, KEY_PREFIXES, leadingKeys } from '../core/cloud/storage-layout';
import { DEFAULT_BATCH_POLL_SCHEDULE } from '../core/cloud/generation-polling';
import { artifactWildcardFinding, grantArtifacts, grantTableItems } from './storage-grants';

/** One provider lane as built: its queue, its dead-letter queue and its configuration. */
export interface GenerationLane {
  readonly config: Required<LaneConfig>;
  readonly queue: sqs.Queue;
  readonly deadLetterQueue: sqs.Queue;
}

/** Receives of a lane message before its DLQ: AWS's advice for an SQS queue with a Lambda consumer (throttles count). */
export const DEFAULT_MAX_RECEIVE_COUNT = 5;

export interface GenerationConstructProps {
  /** The run table: runs, tasks, completions, claims and the batch ledger. */
  readonly table: dynamodb.ITable;
  /** The artifacts bucket: psets and run inputs the model callers read. */
  readonly bucket: s3.IBucket;
  /**
   * Provider lanes: one queue each, drained at the lane's maximum concurrency.
   * @default DEFAULT_LANES (openai 8, anthropic 4, gemini 4, bedrock 4)
   */
  readonly lanes?: readonly LaneConfig[];
  /**
   * Generator function timeout: one batch of model calls, retries included.
   * The lane queues' visibility timeout is six times this.
   * @default Duration.minutes(10)
   */
  readonly generatorTimeout?: Duration;
  /**
   * Generator memory, MiB.
   * @default 512
   */
  readonly generatorMemorySize?: number;
  /**
   * Deliveries of a message before it moves to the lane's DLQ. The generator retries
   * retryable provider errors itself and stores a failed completion for final ones, so a
   * message is redelivered only when an invocation crashed or timed out, or was throttled:
   * AWS advises at least 5 where Lambda consumes the queue, as throttled polls count as
   * receives. At least 5.
   * @default DEFAULT_MAX_RECEIVE_COUNT (5)
   */
  readonly maxReceiveCount?: number;
  /**
   * Bedrock models and inference profiles the generator may invoke (bedrock:InvokeModel,
   * which the Converse API needs). Bedrock takes no API key: IAM is its key.
   * @default - when a lane is named `bedrock`: every foundation model and this account's
   * inference profiles; otherwise none
   */
  readonly bedrockResourceArns?: string[];
  /**
   * The deployment's models file, carried in the generator's bundle and merged over the
   * shipped registry (config.ts `modelsFile`).
   * @default - the shipped registry only
   */
  readonly modelsFile?: string;
  /**
   * The stages whose functions this construct creates (those of `construct: 'generation'`):
   * the lanes' consumer, the dead-letter consumer, the batch round and any a table adds.
   * @default CLOUD_STAGES
   */
  readonly stages?: StageTable;
  /**
   * Shortest pause between two rounds of the batch lane (a young execution's).
   * @default Duration.seconds(DEFAULT_BATCH_POLL_SCHEDULE.minSec) (1 minute)
   */
  readonly batchPollInterval?: Duration;
  /**
   * Longest pause between two rounds: the pause grows with the execution's age up to this,
   * which bounds the lane's history events over the providers' 24 h window.
   * @default Duration.seconds(DEFAULT_BATCH_POLL_SCHEDULE.maxSec) (15 minutes)
   */
  readonly batchPollMaxInterval?: Duration;
  /**
   * The run's generation deadline, which the batch round keeps as CheckProgress does: past
   * it, the round cancels its pending batches (RCB_GENERATION_TIMEOUT_SEC).
   * @default DEFAULT_GENERATION_TIMEOUT (24 hours)
   */
  readonly generationTimeout?: Duration;
  /**
   * Bedrock batch inference from the batch round: it may create, read, list and stop model
   * invocation jobs, pass these roles to Bedrock, and write and read under these locations.
   * @default - none (a Bedrock model in batch mode fails its round with AccessDenied)
   */
  readonly bedrockBatch?: BedrockBatchConfig;
}

/** How long generation of a run may take before CheckProgress and the batch round give up on it. */
export const DEFAULT_GENERATION_TIMEOUT = Duration.hours(24);

/** Timeout of the batch round function: one submit (upload and create), one poll per pending batch, the results of those that ended. */
const BATCH_ROUND_TIMEOUT = Duration.minutes(5);

/** Timeout of the dead-letter function: a batch of store writes. */
const DEAD_LETTER_TIMEOUT = Duration.minutes(1);

/**
 * Generation: SQS lanes fanning tasks to the generator Lambda, which calls model APIs with
 * keys from the one secret only it can read.
 */
export class GenerationConstruct extends Construct {
  public readonly lanes: GenerationLane[];
  public readonly generator: RcbFunction;
  /** Consumer of the lanes' DLQs: a dead-lettered task becomes a failed completion, so its run settles. */
  public readonly deadLetter: RcbFunction;
  /** Provider API keys, a JSON object `{ "OPENAI_API_KEY": "...", ... }`. */
  public readonly keysSecret: secretsmanager.Secret;
  /**
   * One round of the batch lane (functions/batch-round): submit, poll once, ingest. Invoked by
   * the workflow's batch lane (BatchLaneConstruct); the state machine waits between rounds.
   */
  public readonly batchRound: RcbFunction;
  /** The functions of every stage of the table this construct owns, by stage name. */
  public readonly functions: Readonly<Record<string, RcbFunction>>;

  constructor(scope: Construct, id: string, props: GenerationConstructProps) {
    super(scope, id);
    const lanes = validateLanes(props.lanes ?? DEFAULT_LANES) as Required<LaneConfig>[];
    const timeout = props.generatorTimeout ?? Duration.minutes(10);
    const maxReceiveCount = props.maxReceiveCount ?? DEFAULT_MAX_RECEIVE_COUNT;
    if (!Number.isInteger(maxReceiveCount) || maxReceiveCount < 5 || maxReceiveCount > 1000) {
      throw new Error(`maxReceiveCount must be an integer in 5..1000 (got ${maxReceiveCount}): AWS advises at least 5 on a queue Lambda consumes`);
    }
    const { table, bucket } = props;

    this.keysSecret = new secretsmanager.Secret(this, 'ProviderKeys', {
      description: 'rcb model provider API keys: a JSON object of KEY_NAME -> value, read only by the generator and the batch round',
      // Starts as an empty JSON object; the team writes the real keys with put-secret-value.
      secretObjectValue: {},
    });

    const settings = this.stageSettings(props, timeout);
    // A stage the table adds runs with the table and the bucket named (its grants are its construct's).
    this.functions = createStageFunctions(
      this,
      props.stages ?? CLOUD_STAGES,
      'generation',
      (name) => settings[name as StageName] ?? { environment: { RCB_TABLE: table.tableName, RCB_BUCKET: bucket.bucketName } },
    );
    this.generator = requiredStageFunction(this.functions, queueConsumer(props.stages ?? CLOUD_STAGES, 'lanes'), 'generation');
    this.batchRound = requiredStageFunction(this.functions, 'batch-round', 'generation');
    this.deadLetter = requiredStageFunction(this.functions, queueConsumer(props.stages ?? CLOUD_STAGES, 'dead-letters'), 'generation');
    const generatorRole = this.generator.role;

    // Reserve and settle budget on the run item, read tasks, write completions (first write
    // wins) and take generation claims.
    grantTableItems(table, generatorRole, ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem']);
    // Release its in-flight claims on tasks (TASK#<taskId>/CLAIM): the one delete it needs,
    // confined to the task partitions.
    grantTableItems(table, generatorRole, ['dynamodb:DeleteItem'], { leadingKeys: [leadingKeys(KEY_PREFIXES.task)] });
    // Reads the run's inputs (pset bundle, prompt template, plan manifest); it writes no object.
    grantArtifacts(bucket, generatorRole, {
      read: [ARTIFACT_PATTERNS.psets, ARTIFACT_PATTERNS.runs],
    });

    const bedrockArns =
      props.bedrockResourceArns ??
      (lanes.some((l) => l.name === 'bedrock')
        ? [`arn:${Aws.PARTITION}:bedrock:*::foundation-model/*`, `arn:${Aws.PARTITION}:bedrock:*:${Aws.ACCOUNT_ID}:inference-profile/*`]
        : []);
    if (bedrockArns.length > 0) {
      generatorRole.addToPrincipalPolicy(
        new iam.PolicyStatement({
          actions: ['bedrock:InvokeModel', 'bedrock:InvokeModelWithResponseStream'],
          resources: bedrockArns,
        }),
      );
    }

    // The run item (budget reservations, counters, status), the run's batch items
    // (RUN#<runId>/BATCH#..., the ledger: Query and UpdateItem) and the tasks' completions
    // (TASK#<taskId>/COMPLETION, first write wins). No claim, no delete.
    grantTableItems(table, this.batchRound.role, ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:PutItem', 'dynamodb:UpdateItem'], {
      leadingKeys: [leadingKeys(KEY_PREFIXES.run), leadingKeys(KEY_PREFIXES.task)],
    });
    grantArtifacts(bucket, this.batchRound.role, { read: [ARTIFACT_PATTERNS.psets, ARTIFACT_PATTERNS.runs] });
    NagSuppressions.addResourceSuppressions(
      this.batchRound.role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason: 'Object-key wildcards: the batch round reads psets/* and runs/* (run ids are only known at run time); it writes no object.',
          appliesTo: [artifactWildcardFinding(ARTIFACT_PATTERNS.psets, ARTIFACT_PATTERNS.runs)],
        },
      ],
      true,
    );

    if (props.bedrockBatch) this.grantBedrockBatch(props.bedrockBatch);

    this.keysSecret.grantRead(generatorRole);
    this.keysSecret.grantRead(this.batchRound.role);
    // "Only the generator and the batch round": an explicit deny for every other principal of
    // the account, so that a later broad grant (an admin role, another function) cannot read
    // the keys either. Writing the secret (PutSecretValue) stays with IAM administrators.
    this.keysSecret.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'OnlyTheModelCallersReadProviderKeys',
        effect: iam.Effect.DENY,
        principals: [new iam.AnyPrincipal()],
        actions: ['secretsmanager:GetSecretValue'],
        resources: ['*'],
        conditions: { StringNotEquals: { 'aws:PrincipalArn': [generatorRole.roleArn, this.batchRound.role.roleArn] } },
      }),
    );
    NagSuppressions.addResourceSuppressions(this.keysSecret, [
      {
        id: 'AwsSolutions-SMG4',
        reason:
          'Model provider API keys are issued by third parties (OpenAI, Anthropic, Google) and cannot be rotated by a Lambda here; the team rotates them at the provider and writes the new value with put-secret-value.',
      },
    ]);

    // Read the run's tasks and the task's completion; write the failed completion (first write wins).
    // ... and count it on the run item (UpdateItem ADD).
    grantTableItems(table, this.deadLetter.role, ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:PutItem', 'dynamodb:UpdateItem']);

    this.lanes = lanes.map((lane) => {
      const laneId = pascal(lane.name);
      const deadLetterQueue = new sqs.Queue(this, `${laneId}DeadLetterQueue`, {
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        retentionPeriod: Duration.days(14),
        // Consumed by the dead-letter function: six times its timeout, as for the lanes.
        visibilityTimeout: Duration.seconds(DEAD_LETTER_TIMEOUT.toSeconds() * 6),
      });
      const queue = new sqs.Queue(this, `${laneId}Queue`, {
        encryption: sqs.QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        // AWS guidance for SQS-triggered functions: at least six times the function timeout,
        // so that retries by the event source never see a message still being processed.
        visibilityTimeout: Duration.seconds(timeout.toSeconds() * 6),
        retentionPeriod: Duration.days(4),
        receiveMessageWaitTime: Duration.seconds(20),
        deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount },
      });
      NagSuppressions.addResourceSuppressions(deadLetterQueue, [
        {
          id: 'Serverless-SQSRedrivePolicy',
          reason: `This queue is the dead-letter queue of the ${lane.name} lane: a DLQ of a DLQ would only hide failures, so its depth is alarmed on instead.`,
        },
      ]);
      this.generator.live.addEventSource(
        new lambdaEventSources.SqsEventSource(queue, {
          batchSize: lane.batchSize,
          maxConcurrency: lane.maxConcurrency,
          reportBatchItemFailures: true,
        }),
      );
      this.deadLetter.live.addEventSource(new lambdaEventSources.SqsEventSource(deadLetterQueue, { batchSize: 10, reportBatchItemFailures: true }));
      return { config: lane, queue, deadLetterQueue };
    });

    // The lanes' shared throttles (core/lane-throttle.ts): the generator finds a record's lane by
    // its queue's ARN and holds a slot of that lane's limit (LANE#<lane> on the run table, which
    // its item grants above already cover) per model call, at most the lane's concurrency.
    this.generator.function.addEnvironment(
      'RCB_LANES',
      Stack.of(this).toJsonString(this.lanes.map((l) => ({ name: l.config.name, queueArn: l.queue.queueArn, maxConcurrency: l.config.maxConcurrency }))),
    );

    // After the event sources: applyToChildren covers the children that exist now.
    NagSuppressions.addResourceSuppressions(
      this.deadLetter.function,
      [
        {
          id: 'Serverless-LambdaEventSourceMappingDestination',
          reason: 'It consumes the dead-letter queues themselves: a failed record stays in its DLQ (14 days), whose depth is alarmed on.',
        },
      ],
      true,
    );
    NagSuppressions.addResourceSuppressions(
      generatorRole,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'Object-key wildcards: the generator reads psets/* and runs/* (run ids are only known at run time). Bedrock: model and inference-profile ids are chosen per run from the model registry; only InvokeModel actions are granted, and bedrockResourceArns narrows them.',
          appliesTo: [
            artifactWildcardFinding(ARTIFACT_PATTERNS.psets, ARTIFACT_PATTERNS.runs),
            { regex: '/^Resource::arn:<AWS::Partition>:bedrock:\\*:(<AWS::AccountId>)?:(foundation-model|inference-profile)\\/\\*$/g' },
          ],
        },
      ],
      true,
    );
    NagSuppressions.addResourceSuppressions(
      this.generator.function,
      [
        {
          id: 'Serverless-LambdaEventSourceMappingDestination',
          reason:
            "SQS event source mappings do not support on-failure destinations; failed messages go to each lane queue's dead-letter queue through its redrive policy.",
        },
      ],
      true,
    );
  }

  /** The shipped stages' function settings: sizes, timeouts and environments from the props. */
  private stageSettings(props: GenerationConstructProps, timeout: Duration): Partial<Record<StageName, StageFunctionSettings>> {
    const { table, bucket } = props;
    return {
      generate: {
        memorySize: props.generatorMemorySize ?? 512,
        timeout,
        extraResources: props.modelsFile ? { [DEPLOYED_MODELS_FILE]: props.modelsFile } : undefined,
        environment: {
          RCB_TABLE: table.tableName,
          RCB_BUCKET: bucket.bucketName,
          RCB_KEYS_SECRET_ARN: this.keysSecret.secretArn,
        },
      },
      'batch-round': {
        timeout: BATCH_ROUND_TIMEOUT,
        memorySize: 512,
        extraResources: props.modelsFile ? { [DEPLOYED_MODELS_FILE]: props.modelsFile } : undefined,
        environment: {
          RCB_TABLE: table.tableName,
          RCB_BUCKET: bucket.bucketName,
          RCB_KEYS_SECRET_ARN: this.keysSecret.secretArn,
          RCB_BATCH_POLL_MIN_SEC: String((props.batchPollInterval ?? Duration.seconds(DEFAULT_BATCH_POLL_SCHEDULE.minSec)).toSeconds()),
          RCB_BATCH_POLL_MAX_SEC: String((props.batchPollMaxInterval ?? Duration.seconds(DEFAULT_BATCH_POLL_SCHEDULE.maxSec)).toSeconds()),
          RCB_GENERATION_TIMEOUT_SEC: String((props.generationTimeout ?? DEFAULT_GENERATION_TIMEOUT).toSeconds()),
        },
      },
      'dead-letter': {
        timeout: DEAD_LETTER_TIMEOUT,
        environment: { RCB_TABLE: table.tableName, RCB_BUCKET: bucket.bucketName },
      },
    };
  }

  /** The batch round's Bedrock batch inference: jobs of this account, the given roles passed to Bedrock only, the given S3 locations. */
  private grantBedrockBatch(config: BedrockBatchConfig): void {
    const role = this.batchRound.role;
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['bedrock:CreateModelInvocationJob', 'bedrock:GetModelInvocationJob', 'bedrock:StopModelInvocationJob'],
        resources: [
          `arn:${Aws.PARTITION}:bedrock:*:${Aws.ACCOUNT_ID}:model-invocation-job/*`,
          `arn:${Aws.PARTITION}:bedrock:*::foundation-model/*`,
          `arn:${Aws.PARTITION}:bedrock:*:${Aws.ACCOUNT_ID}:inference-profile/*`,
        ],
      }),
    );
    // Listing (findByIntent after a crash) supports no resource-level permission.
    role.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ['bedrock:ListModelInvocationJobs'], resources: ['*'] }));
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['iam:PassRole'],
        resources: config.roleArns,
        conditions: { StringEquals: { 'iam:PassedToService': 'bedrock.amazonaws.com' } },
      }),
    );
    const locations = config.s3Uris.map((u) => /^s3:\/\/([^/]+)\/?(.*)$/.exec(u)!).map(([, bucket, prefix]) => ({ bucket, prefix: prefix.replace(/\/$/, '') }));
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['s3:PutObject', 's3:GetObject'],
        resources: locations.map((l) => `arn:${Aws.PARTITION}:s3:::${l.bucket}/${l.prefix ? `${l.prefix}/` : ''}*`),
      }),
    );
    for (const l of locations) {
      role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          actions: ['s3:ListBucket'],
          resources: [`arn:${Aws.PARTITION}:s3:::${l.bucket}`],
          ...(l.prefix ? { conditions: { StringLike: { 's3:prefix': [`${l.prefix}/*`] } } } : {}),
        }),
      );
    }
    NagSuppressions.addResourceSuppressions(
      role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'Bedrock batch inference: job ids are created at run time (model-invocation-job/*), models and inference profiles come from the registry, ListModelInvocationJobs has no resource-level permission, and the JSONL objects are keyed per job under the configured batch_s3_uri prefixes only.',
        },
      ],
      true,
    );
  }
}

/** `open-ai` -> `OpenAi`, for construct ids. */
export function pascal(name: string): string {
  return name
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}
