import { shardEphemeralStorageGiB } from './ephemeral-storage';
import { Aws, Duration, IgnoreMode, RemovalPolicy } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecr from 'aws-cdk-lib/aws-ecr';
import * as ecrAssets from 'aws-cdk-lib/aws-ecr-assets';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { PROJECT_ROOT } from './rcb-function';
import { artifactWildcardFinding, grantArtifacts, grantTableItems } from './storage-grants';
import { ARTIFACT_PATTERNS, COUNTER_ATTRIBUTES, KEY_PREFIXES, TABLE_ATTRIBUTES, leadingKeys } from '../core/cloud/storage-layout';

/** Name of the evaluator container: the orchestrator's containerOverrides refer to it. */
export const EVALUATOR_CONTAINER_NAME = 'evaluator';
/** Where the scratch volume is mounted: the only writable path of the container. */
export const SCRATCH_PATH = '/scratch';
/**
 * The task runs as root: the uid sandbox (Fargate refuses the user namespaces bubblewrap
 * needs) switches each worker slot to its own unprivileged uid, which only root can do.
 */
export const EVALUATOR_USER = '0:0';
/**
 * The only capabilities the evaluator keeps, what the uid sandbox needs: SETUID/SETGID to
 * run a slot's tests as its uid, CHOWN/FOWNER/DAC_OVERRIDE to hand it its workspace and
 * clean up after it, KILL to stop every process of that uid after each test.
 */
export const EVALUATOR_CAPABILITIES: readonly ecs.Capability[] = [
  ecs.Capability.SETUID,
  ecs.Capability.SETGID,
  ecs.Capability.CHOWN,
  ecs.Capability.FOWNER,
  ecs.Capability.DAC_OVERRIDE,
  ecs.Capability.KILL,
];
/** The image's venv interpreter (container/Dockerfile), the one with the tests' packages. */
export const EVALUATOR_PYTHON = '/opt/venv/bin/python3';
/** The sandbox the container runs tests in (RCB_SANDBOX): one uid per slot, no namespaces. */
export const EVALUATOR_SANDBOX = 'uid';

/**
 * What the task definition drops: every capability but the kept ones. Fargate can add
 * none but SYS_PTRACE, so "drop ALL, add these" is not expressible; dropping the rest of
 * the whole list holds whatever the platform's default set is.
 */
export function droppedCapabilities(): ecs.Capability[] {
  return Object.values(ecs.Capability).filter((c) => c !== ecs.Capability.ALL && !EVALUATOR_CAPABILITIES.includes(c));
}

/**
 * Paths kept out of the Docker build context. Besides size, each one would change the
 * asset hash (and force an image rebuild) without changing the image. Nothing entry.ts
 * compiles from may be here (core/, app/, adapters/, container/, tsconfig.json, package files):
 * test/infra/container-build-context.test.ts compiles the staged context as the image does.
 */
export const CONTAINER_ASSET_EXCLUDES = [
  '.git',
  'node_modules',
  '**/node_modules',
  'cdk.out',
  'dist',
  'runs',
  '.rcb',
  'coverage',
  'test',
  'infra',
  'bin',
  'functions',
  'docs',
  'bench',
  'fakes',
  'scripts',
  'quickstart.sh',
  'tsconfig.build.json',
  '*.md',
  '.ci',
  'cdk.json',
  'cdk.context.json',
  'jest.config.js',
];

export interface EvaluationConstructProps {
  /** The run table: the task reads a run's inputs there and writes its verdicts. */
  readonly table: dynamodb.ITable;
  /** The artifacts bucket: the task reads psets and run inputs and writes its evaluation outputs. */
  readonly bucket: s3.IBucket;
  /** The network the cluster and its tasks live in (NetworkConstruct's isolated VPC). */
  readonly vpc: ec2.IVpc;
  /** Where the evaluator container's logs go (NetworkConstruct's task log group, the one its logs endpoint admits). */
  readonly logGroup: logs.ILogGroup;
  /**
   * vCPU units of one shard task (1024 = 1 vCPU); must pair with memoryMiB as Fargate allows.
   * @default 2048
   */
  readonly cpu?: number;
  /**
   * Memory of one shard task, MiB.
   * @default 8192
   */
  readonly memoryMiB?: number;
  /**
   * CPU architecture of the image and the task. X86_64 builds natively on most CI hosts
   * and has the longest Fargate Spot track record; ARM64 is about 20% cheaper per vCPU-hour.
   * @default ecs.CpuArchitecture.X86_64
   */
  readonly cpuArchitecture?: ecs.CpuArchitecture;
  /**
   * A prebuilt evaluation image, `<repository name or URI>@sha256:<digest>` (what `rcb cloud
   * push-image` pushes to the stack's image repository and prints).
   * @default - the image is built from container/Dockerfile during cdk deploy
   */
  readonly image?: string;
  /**
   * Ephemeral storage of a shard task, GiB (21..200): the image, compressed and unpacked, and
   * the tests' scratch (infra/ephemeral-storage.ts).
   * @default shardEphemeralStorageGiB() of the measured image
   */
  readonly ephemeralStorageGiB?: number;
  /**
   * CloudWatch Container Insights on the cluster (billed per task metric).
   * @default false
   */
  readonly containerInsights?: boolean;
}

/** `<repository>@sha256:<hex>` as an ECS image pinned by digest; a URI's registry host is dropped (same account and region). */
export function prebuiltImage(scope: Construct, reference: string): ecs.ContainerImage {
  const at = reference.lastIndexOf('@');
  const digest = reference.slice(at + 1);
  const repository = reference.slice(0, at).replace(/^[0-9]{12}\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com(\.cn)?\//, '');
  if (at < 0 || !/^sha256:[0-9a-f]{64}$/.test(digest) || !repository) {
    throw new Error(`rcb:image: expected <repository>@sha256:<64 hex digits>, got ${JSON.stringify(reference)}`);
  }
  return ecs.ContainerImage.fromEcrRepository(ecr.Repository.fromRepositoryName(scope, 'PrebuiltImageRepository', repository), digest);
}

/**
 * The evaluation task: an ECS cluster with Fargate Spot and Fargate capacity providers in
 * the given VPC, the shard task definition (the evaluator image, read-only root, dropped
 * capabilities, one scratch volume) and its task role, narrowed to what a shard reads and
 * writes.
 */
export class EvaluationConstruct extends Construct {
  public readonly cluster: ecs.Cluster;
  public readonly taskDefinition: ecs.FargateTaskDefinition;
  public readonly container: ecs.ContainerDefinition;
  public readonly taskRole: iam.Role;
  /** Where `rcb cloud push-image` pushes prebuilt images: lifecycle-ruled, emptied and deleted with the stack. */
  public readonly imageRepository: ecr.Repository;

  constructor(scope: Construct, id: string, props: EvaluationConstructProps) {
    super(scope, id);
    const { table, bucket } = props;
    const arch = props.cpuArchitecture ?? ecs.CpuArchitecture.X86_64;

    this.cluster = new ecs.Cluster(this, 'Cluster', {
      vpc: props.vpc,
      enableFargateCapacityProviders: true,
      containerInsightsV2: props.containerInsights ? ecs.ContainerInsights.ENABLED : ecs.ContainerInsights.DISABLED,
    });
    this.cluster.addDefaultCapacityProviderStrategy([{ capacityProvider: 'FARGATE_SPOT', weight: 1 }]);
    if (!props.containerInsights) {
      NagSuppressions.addResourceSuppressions(this.cluster, [
        {
          id: 'AwsSolutions-ECS4',
          reason:
            'Container Insights bills per task metric; shard outcomes are tracked by Step Functions (failed executions alarm) and the task logs. Enable with containerInsights: true.',
        },
      ]);
    }

    this.taskRole = new iam.Role(this, 'TaskRole', {
      assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com'),
      description: "rcb shard task: reads a run's inputs, writes its verdicts and evaluation logs",
    });
    // What a shard reads (core/cloud/evaluate-shard.ts): its run's item (GetItem on
    // RUN#<runId>), its own tasks' verdicts (BatchGetItem on RUN#<runId>) and completions
    // (BatchGetItem on TASK#<taskId>); its tasks come from the plan manifest. Query on
    // RUN#<runId> stays allowed: a run pinned to an image of before that change (a deploy
    // mid-sweep leaves the sweep on its image) lists the run's tasks and verdicts, under the
    // same role. No index: gsi1 lists every run, and run and task ids are hashes a task
    // cannot guess, so it reads only what it is told about. IAM cannot narrow to one run:
    // the run id is known at run time only.
    grantTableItems(table, this.taskRole, ['dynamodb:GetItem', 'dynamodb:Query'], { leadingKeys: [leadingKeys(KEY_PREFIXES.run)] });
    grantTableItems(table, this.taskRole, ['dynamodb:BatchGetItem'], { leadingKeys: [leadingKeys(KEY_PREFIXES.task), leadingKeys(KEY_PREFIXES.run)] });
    // What it writes: verdict items (first write wins) under the run's partition, nothing else.
    grantTableItems(table, this.taskRole, ['dynamodb:PutItem'], { leadingKeys: [leadingKeys(KEY_PREFIXES.run)] });
    // The environment check of its paper, kept per image (core/cloud/shard-environment.ts): read,
    // claim and store items under IMAGE#<digest>, nothing else there.
    grantTableItems(table, this.taskRole, ['dynamodb:GetItem', 'dynamodb:PutItem'], { leadingKeys: [leadingKeys(KEY_PREFIXES.image)] });
    // And the run's count of verdicts (ADD on the run item): that one attribute, no other.
    grantTableItems(table, this.taskRole, ['dynamodb:UpdateItem'], {
      leadingKeys: [leadingKeys(KEY_PREFIXES.run)],
      attributes: [TABLE_ATTRIBUTES.partitionKey, TABLE_ATTRIBUTES.sortKey, COUNTER_ATTRIBUTES.judged],
    });
    grantArtifacts(bucket, this.taskRole, {
      read: [ARTIFACT_PATTERNS.psets, ARTIFACT_PATTERNS.runs],
      list: [ARTIFACT_PATTERNS.psets],
      write: [ARTIFACT_PATTERNS.evaluationOutput],
    });

    this.imageRepository = new ecr.Repository(this, 'ImageRepository', {
      imageScanOnPush: true,
      imageTagMutability: ecr.TagMutability.IMMUTABLE,
      encryption: ecr.RepositoryEncryption.AES_256,
      removalPolicy: RemovalPolicy.DESTROY,
      emptyOnDelete: true,
      lifecycleRules: [
        { description: 'untagged layers of replaced pushes', tagStatus: ecr.TagStatus.UNTAGGED, maxImageAge: Duration.days(1), rulePriority: 1 },
        { description: 'keep the last 5 images (a rollback target or two)', tagStatus: ecr.TagStatus.ANY, maxImageCount: 5, rulePriority: 2 },
      ],
    });

    this.taskDefinition = new ecs.FargateTaskDefinition(this, 'ShardTask', {
      cpu: props.cpu ?? 2048,
      memoryLimitMiB: props.memoryMiB ?? 8192,
      ephemeralStorageGiB: props.ephemeralStorageGiB ?? shardEphemeralStorageGiB(),
      runtimePlatform: { cpuArchitecture: arch, operatingSystemFamily: ecs.OperatingSystemFamily.LINUX },
      taskRole: this.taskRole,
      volumes: [{ name: 'scratch' }],
    });

    const linuxParameters = new ecs.LinuxParameters(this, 'LinuxParameters', { initProcessEnabled: true });
    linuxParameters.dropCapabilities(...droppedCapabilities());

    this.container = this.taskDefinition.addContainer('Evaluator', {
      containerName: EVALUATOR_CONTAINER_NAME,
      image: props.image
        ? prebuiltImage(this, props.image)
        : ecs.ContainerImage.fromAsset(PROJECT_ROOT, {
            file: 'container/Dockerfile',
            exclude: CONTAINER_ASSET_EXCLUDES,
            ignoreMode: IgnoreMode.DOCKER,
            platform: arch === ecs.CpuArchitecture.ARM64 ? ecrAssets.Platform.LINUX_ARM64 : ecrAssets.Platform.LINUX_AMD64,
          }),
      user: EVALUATOR_USER,
      readonlyRootFilesystem: true,
      linuxParameters,
      essential: true,
      // Fargate Spot gives two minutes' notice; the entry point flushes finished verdicts on SIGTERM.
      stopTimeout: Duration.seconds(120),
      logging: ecs.LogDrivers.awsLogs({ streamPrefix: 'shard', logGroup: props.logGroup }),
      environment: {
        RCB_TABLE: table.tableName,
        RCB_BUCKET: bucket.bucketName,
        RCB_SCRATCH: SCRATCH_PATH,
        RCB_PYTHON: EVALUATOR_PYTHON,
        RCB_SANDBOX: EVALUATOR_SANDBOX,
        AWS_REGION: Aws.REGION,
      },
    });
    this.container.addMountPoints({ sourceVolume: 'scratch', containerPath: SCRATCH_PATH, readOnly: false });

    NagSuppressions.addResourceSuppressions(this.taskDefinition, [
      {
        id: 'AwsSolutions-ECS2',
        reason: 'The environment holds resource names (table, bucket, scratch path) only; no secret is passed to the container.',
      },
    ]);
    NagSuppressions.addResourceSuppressions(
      this.taskDefinition,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason: 'Execution role: ecr:GetAuthorizationToken supports no resource-level permission (CDK grants it on "*" to pull the asset image).',
          appliesTo: ['Resource::*'],
        },
      ],
      true,
    );
    NagSuppressions.addResourceSuppressions(
      this.taskRole,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'Object-key wildcards: the task reads psets/* and runs/* (its run id is only known at run time) and writes runs/*/evaluation/* only; its DynamoDB writes are limited to RUN#* and IMAGE#* partitions (the environment check of its paper, kept per image).',
          appliesTo: [artifactWildcardFinding(ARTIFACT_PATTERNS.psets, ARTIFACT_PATTERNS.runs), artifactWildcardFinding(ARTIFACT_PATTERNS.evaluationOutput)],
        },
      ],
      true,
    );
  }
}
