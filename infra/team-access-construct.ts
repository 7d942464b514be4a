import { Arn, ArnFormat, Stack } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { artifactWildcardFinding } from './storage-grants';
import { ARTIFACT_PATTERNS, KEY_PREFIXES, RUNS_INDEX_PARTITION, TABLE_ATTRIBUTES, leadingKeys } from '../core/cloud/storage-layout';

export interface TeamAccessConstructProps {
  /** The run table: runners and readers read runs, tasks, completions and verdicts. */
  readonly table: dynamodb.ITable;
  /** The artifacts bucket: runners upload under `psets/`, both read `runs/`. */
  readonly bucket: s3.IBucket;
  /** The run workflow: runners start, follow and stop its executions. */
  readonly stateMachine: sfn.IStateMachine;
  /** The provider keys: refused to both policies, whatever else the role holds. */
  readonly keysSecret: secretsmanager.ISecret;
  /**
   * What a runner may additionally do to manage schedules (the stack's schedule group and
   * passing the schedule role), from ScheduleConstruct.
   * @default - no schedule statements
   */
  readonly scheduleStatements?: iam.PolicyStatement[];
}

/**
 * The attributes `rcb cloud cancel` sets on a run item (adapters/aws/dynamo-run-store.ts
 * setRunStatus, its condition naming the partition key): the runner's one table write, so it
 * can never write a verdict, task or completion item's content (docs/cloud.md#team-access).
 */
export const RUN_STATUS_ATTRIBUTES = [TABLE_ATTRIBUTES.partitionKey, TABLE_ATTRIBUTES.sortKey, 'status', 'updatedAt', 'error'];

/**
 * Two customer-managed policies for a team's own roles (SSO permission sets, a CI job's OIDC
 * role): the runner starts, follows and cancels runs, uploads psets and replays and reads
 * results; the reader reads results and reports. Both are limited to this stack's resources,
 * and both carry explicit denials (the keys secret, changing the stack, writing verdicts) that
 * hold even beside a broader policy of the same role (docs/cloud.md#team-access).
 */
export class TeamAccessConstruct extends Construct {
  public readonly runnerPolicy: iam.ManagedPolicy;
  public readonly readerPolicy: iam.ManagedPolicy;

  constructor(scope: Construct, id: string, props: TeamAccessConstructProps) {
    super(scope, id);
    const read = [...this.stackReads(), ...this.resultReads(props)];
    this.readerPolicy = new iam.ManagedPolicy(this, 'ReaderPolicy', {
      description: "rcb reader: the results and reports of the stack's runs, nothing else",
      statements: [...read, ...this.denials(props)],
    });
    this.runnerPolicy = new iam.ManagedPolicy(this, 'RunnerPolicy', {
      description: 'rcb runner: start, follow and cancel runs, upload psets and replays, read results, of this stack only',
      statements: [...read, ...this.runStatements(props), ...(props.scheduleStatements ?? []), ...this.denials(props)],
    });
    const reason =
      'Object-key wildcards: runs/* and psets/* (run ids and bundle digests are only known at run time); executions of the one run workflow (named by run id); schedules of the stack group, and scheduler:ListSchedules, which names no resource.';
    for (const policy of [this.readerPolicy, this.runnerPolicy]) {
      NagSuppressions.addResourceSuppressions(policy, [
        {
          id: 'AwsSolutions-IAM5',
          reason,
          appliesTo: [
            artifactWildcardFinding(ARTIFACT_PATTERNS.psets, ARTIFACT_PATTERNS.runs),
            { regex: '/^Resource::arn:<AWS::Partition>:states:.*:execution:.*:\\*$/g' },
            // The stack's schedule group, and ListSchedules, which has no resource.
            { regex: '/^Resource::arn:<AWS::Partition>:scheduler:.*:schedule\\/.*\\/\\*$/g' },
            'Resource::*',
          ],
        },
      ]);
    }
  }

  /** `rcb cloud *` finds the bucket, table and workflow in the stack's outputs. */
  private stackReads(): iam.PolicyStatement[] {
    return [new iam.PolicyStatement({ sid: 'FindStackOutputs', actions: ['cloudformation:DescribeStacks'], resources: [Stack.of(this).stackId] })];
  }

  private resultReads(props: TeamAccessConstructProps): iam.PolicyStatement[] {
    const { table, bucket } = props;
    return [
      new iam.PolicyStatement({
        sid: 'ReadRunItems',
        actions: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query'],
        resources: [table.tableArn, `${table.tableArn}/index/${TABLE_ATTRIBUTES.gsi1Name}`],
        // Runs with their tasks and verdicts, and the completions (TASK#); not the lane throttles or image checks.
        conditions: {
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [leadingKeys(KEY_PREFIXES.run), leadingKeys(KEY_PREFIXES.task), RUNS_INDEX_PARTITION] },
        },
      }),
      new iam.PolicyStatement({ sid: 'ReadRunArtifacts', actions: ['s3:GetObject'], resources: [bucket.arnForObjects(ARTIFACT_PATTERNS.runs)] }),
      new iam.PolicyStatement({
        sid: 'ListRunArtifacts',
        actions: ['s3:ListBucket'],
        resources: [bucket.bucketArn],
        conditions: { StringLike: { 's3:prefix': [ARTIFACT_PATTERNS.runs] } },
      }),
    ];
  }

  private runStatements(props: TeamAccessConstructProps): iam.PolicyStatement[] {
    const { table, bucket, stateMachine } = props;
    const executions = Stack.of(this).formatArn({
      service: 'states',
      resource: 'execution',
      resourceName: `${Arn.split(stateMachine.stateMachineArn, ArnFormat.COLON_RESOURCE_NAME).resourceName}:*`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    return [
      new iam.PolicyStatement({ sid: 'StartRuns', actions: ['states:StartExecution'], resources: [stateMachine.stateMachineArn] }),
      new iam.PolicyStatement({ sid: 'FollowAndStopRuns', actions: ['states:DescribeExecution', 'states:StopExecution'], resources: [executions] }),
      new iam.PolicyStatement({
        sid: 'UploadPsetsAndReplays',
        actions: ['s3:GetObject', 's3:PutObject'],
        resources: [bucket.arnForObjects(ARTIFACT_PATTERNS.psets)],
      }),
      new iam.PolicyStatement({
        sid: 'ListPsets',
        actions: ['s3:ListBucket'],
        resources: [bucket.bucketArn],
        conditions: { StringLike: { 's3:prefix': [ARTIFACT_PATTERNS.psets] } },
      }),
      new iam.PolicyStatement({
        sid: 'CancelRuns',
        actions: ['dynamodb:UpdateItem'],
        resources: [table.tableArn],
        conditions: {
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [leadingKeys(KEY_PREFIXES.run)] },
          'ForAllValues:StringEquals': { 'dynamodb:Attributes': RUN_STATUS_ATTRIBUTES },
        },
      }),
    ];
  }

  /** What neither policy may do, even when another policy of the same role allows it. */
  private denials(props: TeamAccessConstructProps): iam.PolicyStatement[] {
    const { table, bucket, keysSecret } = props;
    return [
      new iam.PolicyStatement({ sid: 'NeverTheProviderKeys', effect: iam.Effect.DENY, actions: ['secretsmanager:*'], resources: [keysSecret.secretArn] }),
      new iam.PolicyStatement({
        sid: 'NeverChangeTheStack',
        effect: iam.Effect.DENY,
        notActions: ['cloudformation:Describe*', 'cloudformation:List*', 'cloudformation:Get*'],
        resources: [Stack.of(this).stackId],
      }),
      new iam.PolicyStatement({
        sid: 'NeverWriteVerdicts',
        effect: iam.Effect.DENY,
        actions: ['dynamodb:PutItem', 'dynamodb:BatchWriteItem', 'dynamodb:DeleteItem', 'dynamodb:PartiQL*', 'dynamodb:Delete*', 'dynamodb:Update*Table*'],
        resources: [table.tableArn, `${table.tableArn}/*`],
      }),
      // An update is the runner's cancel, or refused: only a run item's status attributes.
      new iam.PolicyStatement({
        sid: 'NeverUpdateButARunStatus',
        effect: iam.Effect.DENY,
        actions: ['dynamodb:UpdateItem'],
        resources: [table.tableArn, `${table.tableArn}/*`],
        conditions: { 'ForAnyValue:StringNotEquals': { 'dynamodb:Attributes': RUN_STATUS_ATTRIBUTES } },
      }),
      new iam.PolicyStatement({
        sid: 'NeverUpdateOutsideRuns',
        effect: iam.Effect.DENY,
        actions: ['dynamodb:UpdateItem'],
        resources: [table.tableArn, `${table.tableArn}/*`],
        conditions: { 'ForAnyValue:StringNotLike': { 'dynamodb:LeadingKeys': [leadingKeys(KEY_PREFIXES.run)] } },
      }),
      new iam.PolicyStatement({
        sid: 'NeverWriteRunOutputs',
        effect: iam.Effect.DENY,
        actions: ['s3:PutObject*', 's3:DeleteObject*', 's3:RestoreObject'],
        resources: [bucket.arnForObjects(ARTIFACT_PATTERNS.runs)],
      }),
    ];
  }
}
