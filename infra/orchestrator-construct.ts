import { CfnDeletionPolicy, type CfnResource, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { DEFAULT_GENERATION_TIMEOUT } from './generation-construct';
import { BatchLaneConstruct } from './batch-lane-construct';
import type { RcbFunction } from './rcb-function';
import { createStageFunctions, requiredStageFunction, type StageFunctionSettings } from './stage-functions';
import { CLOUD_STAGES, stateOf, type StageName, type StageTable } from '../app/stages';
import { ShardRunTask } from './shard-run-task';
import { DEPLOYED_MODELS_FILE } from '../core/cloud/bundle-resources';
import { ARTIFACT_PATTERNS, KEY_PREFIXES, leadingKeys } from '../core/cloud/storage-layout';
import { artifactWildcardFinding, grantArtifacts, grantTableItems } from './storage-grants';
import { MAP_MAX_CONCURRENCY, MAP_RESULTS_PREFIX, STATE_NAMES } from './state-names';
import { lambdaTask } from './lambda-retry';
import { MAX_SHARDS_DEFAULT } from '../core/cloud/shard-plan';
import { DEFAULT_POLL_SCHEDULE } from '../core/cloud/generation-polling';

export { STATE_NAMES };

/**
 * Errors that mean "no Fargate (Spot) capacity right now" or a throttled RunTask call:
 * `AmazonECS.Unknown` is what a `.sync` RunTask raises when the response carries
 * `failures` (e.g. RESOURCE:FARGATE); the ECS.* ones are API exceptions.
 */
export const CAPACITY_ERRORS = ['AmazonECS.Unknown', 'ECS.AmazonECSException', 'ECS.ServerException', 'ECS.LimitExceededException'];

/** A provider lane as PlanRun sees it: the queue it sends the lane's task messages to. */
export interface LaneQueue {
  /** The lane's name (config.ts LaneConfig.name), the key of RCB_LANE_QUEUES. */
  readonly name: string;
  readonly queue: sqs.IQueue;
}

/** What the EvaluateShard states run: one task of this definition per shard, in these subnets and groups. */
export interface ShardTaskTarget {
  readonly cluster: ecs.ICluster;
  readonly taskDefinition: ecs.TaskDefinition;
  /** The evaluator container, whose environment the states override with the shard's. */
  readonly container: ecs.ContainerDefinition;
  readonly subnets: ec2.SubnetSelection;
  readonly securityGroups: ec2.ISecurityGroup[];
}

export interface OrchestratorConstructProps {
  /** The run table every workflow function reads and writes. */
  readonly table: dynamodb.ITable;
  /** The artifacts bucket: psets read, run outputs written. */
  readonly bucket: s3.IBucket;
  /** The generation lanes PlanRun routes tasks to (GenerationConstruct's lanes). */
  readonly lanes: readonly LaneQueue[];
  /** One round of the batch lane (GenerationConstruct's batch round function). */
  readonly batchRound: lambda.IFunction;
  /** The shard task the evaluation Map runs (EvaluationConstruct and NetworkConstruct). */
  readonly shardTask: ShardTaskTarget;
  /**
   * Shards evaluated at once: the Distributed Map's MaxConcurrency, i.e. Fargate tasks in
   * flight per run; at most MAP_MAX_CONCURRENCY.distributed (10,000).
   * @default 10
   */
  readonly evaluationMaxConcurrency?: number;
  /**
   * Most shards one run may have (PlanRun refuses more, saying how to split the sweep).
   * @default MAX_SHARDS_DEFAULT (5,000)
   */
  readonly maxShards?: number;
  /**
   * Shortest pause between two generation progress checks (a young run's).
   * @default Duration.seconds(30)
   */
  readonly generationPollInterval?: Duration;
  /**
   * Longest pause between two checks: the pause grows with the run's age up to this
   * (core/cloud/generation-polling.ts), which bounds the loop's history events.
   * @default Duration.minutes(5)
   */
  readonly generationPollMaxInterval?: Duration;
  /**
   * How long CheckProgress lets generation run before it fails the run (it receives this
   * as RCB_GENERATION_TIMEOUT_SEC and decides; the loop itself has no counter). Give the
   * batch round (GenerationConstruct's generationTimeout) the same.
   * @default DEFAULT_GENERATION_TIMEOUT (24 hours)
   */
  readonly generationTimeout?: Duration;
  /**
   * Longest one shard task may run before Step Functions stops it.
   * @default Duration.hours(2)
   */
  readonly shardTimeout?: Duration;
  /**
   * Backstop for the whole execution; a timed-out execution skips the catch path, so it is
   * alarmed on separately.
   * @default Duration.days(3)
   */
  readonly runTimeout?: Duration;
  /**
   * Whether the evaluation network can start tasks (interface endpoints deployed). Passed to
   * PlanRun as RCB_EVALUATION_READY so that it refuses a run early on a parked stack.
   * @default true
   */
  readonly evaluationReady?: boolean;
  /**
   * The deployment's models file, carried in PlanRun's bundle (it prices and routes with the
   * registry) and merged over the shipped one (config.ts `modelsFile`).
   * @default - the shipped registry only
   */
  readonly modelsFile?: string;
  /**
   * The stages whose functions this construct creates (those of `construct: 'orchestrator'`)
   * and whose `after-aggregate` Task states it places.
   * @default CLOUD_STAGES
   */
  readonly stages?: StageTable;
}

/**
 * The run workflow (standard Step Functions): PlanRun; then, in a Parallel, a
 * CheckProgress/Choice/Wait loop while the SQS lanes generate beside the batch lane (rounds
 * of submit/poll/ingest with Waits between them, for the run's batch-mode models), the loop
 * evaluating each wave of ready shards in a Distributed Map of Fargate RunTask `.sync` as
 * it forms (pipelined evaluation); Aggregate; any failure goes to MarkRunFailed, which
 * records the error and keeps what finished.
 */
export class OrchestratorConstruct extends Construct {
  public readonly stateMachine: sfn.StateMachine;
  public readonly planRun: RcbFunction;
  public readonly checkProgress: RcbFunction;
  public readonly aggregate: RcbFunction;
  public readonly markRunFailed: RcbFunction;
  /** The functions of every stage of the table this construct owns, by stage name. */
  public readonly functions: Readonly<Record<string, RcbFunction>>;
  public readonly logGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: OrchestratorConstructProps) {
    super(scope, id);
    const { table, bucket } = props;
    const common = { RCB_TABLE: table.tableName, RCB_BUCKET: bucket.bucketName };
    const stack = Stack.of(this);
    const maxConcurrency = props.evaluationMaxConcurrency ?? 10;
    if (!Number.isInteger(maxConcurrency) || maxConcurrency < 1 || maxConcurrency > MAP_MAX_CONCURRENCY.distributed) {
      throw new Error(
        `evaluationMaxConcurrency must be an integer in 1..${MAP_MAX_CONCURRENCY.distributed}, a Distributed Map's limit (got ${maxConcurrency})`,
      );
    }
    // Every shard of a run uses the revision its PlanRun pinned: a deploy must leave the old
    // revision ACTIVE (an INACTIVE one cannot start tasks), so a replaced revision is retained.
    // Deleting the stack deregisters the current one: `cdk destroy` keeps only what holds results
    // (the revisions earlier deploys replaced stay registered; docs/cloud.md "Remove" lists them).
    const taskDefinition = props.shardTask.taskDefinition.node.defaultChild as CfnResource;
    taskDefinition.applyRemovalPolicy(RemovalPolicy.RETAIN);
    taskDefinition.cfnOptions.deletionPolicy = CfnDeletionPolicy.DELETE;

    const settings = this.stageSettings(props);
    // A stage the table adds runs with the table and the bucket named (its grants are its construct's).
    this.functions = createStageFunctions(this, props.stages ?? CLOUD_STAGES, 'orchestrator', (name) => settings[name as StageName] ?? { environment: common });
    this.planRun = requiredStageFunction(this.functions, 'plan-run', 'orchestrator');
    this.checkProgress = requiredStageFunction(this.functions, 'check-progress', 'orchestrator');
    this.aggregate = requiredStageFunction(this.functions, 'aggregate', 'orchestrator');
    this.markRunFailed = requiredStageFunction(this.functions, 'mark-failed', 'orchestrator');
    grantTableItems(table, this.planRun.role, ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:PutItem', 'dynamodb:UpdateItem']);
    // A restarted run reopens the tasks whose answer was an error: their completion and verdict go.
    grantTableItems(table, this.planRun.role, ['dynamodb:DeleteItem'], { leadingKeys: [leadingKeys(KEY_PREFIXES.task), leadingKeys(KEY_PREFIXES.run)] });
    grantArtifacts(bucket, this.planRun.role, {
      read: [ARTIFACT_PATTERNS.psets],
      list: [ARTIFACT_PATTERNS.psets],
      write: [ARTIFACT_PATTERNS.runs],
    });
    for (const lane of props.lanes) lane.queue.grantSendMessages(this.planRun.role);

    // Progress is read from the run's items alone: it needs no queue access.
    grantTableItems(table, this.checkProgress.role, ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:UpdateItem']);
    // Pipelined evaluation: it reads the execution's shard manifest and writes its waves.
    grantArtifacts(bucket, this.checkProgress.role, { read: [ARTIFACT_PATTERNS.runs], write: [ARTIFACT_PATTERNS.runs] });

    grantTableItems(table, this.aggregate.role, ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:PutItem', 'dynamodb:UpdateItem']);
    grantArtifacts(bucket, this.aggregate.role, {
      read: [ARTIFACT_PATTERNS.psets, ARTIFACT_PATTERNS.runs],
      list: [ARTIFACT_PATTERNS.runs],
      write: [ARTIFACT_PATTERNS.runs],
    });

    grantTableItems(table, this.markRunFailed.role, ['dynamodb:GetItem', 'dynamodb:UpdateItem'], { leadingKeys: [leadingKeys(KEY_PREFIXES.run)] });

    for (const fn of [this.planRun, this.checkProgress, this.aggregate, this.markRunFailed]) {
      NagSuppressions.addResourceSuppressions(
        fn.role,
        [
          {
            id: 'AwsSolutions-IAM5',
            reason:
              "Object-key wildcards under the bucket's psets/ and runs/ prefixes only: run ids and pset digests are known at run time, not at deploy time.",
            appliesTo: [artifactWildcardFinding(ARTIFACT_PATTERNS.psets, ARTIFACT_PATTERNS.runs)],
          },
        ],
        true,
      );
    }

    this.logGroup = new logs.LogGroup(this, 'LogGroup', {
      logGroupName: `/aws/vendedlogs/states/${stack.stackName}-run-workflow`,
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    this.stateMachine = new sfn.StateMachine(this, 'RunWorkflow', {
      stateMachineType: sfn.StateMachineType.STANDARD,
      comment: 'rcb run: plan, generate (SQS lanes), evaluate shards (Fargate), aggregate',
      definitionBody: sfn.DefinitionBody.fromChainable(this.buildDefinition(props, maxConcurrency)),
      timeout: props.runTimeout ?? Duration.days(3),
      tracingEnabled: true,
      logs: { destination: this.logGroup, level: sfn.LogLevel.ALL, includeExecutionData: true },
    });
    NagSuppressions.addResourceSuppressions(
      this.stateMachine,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'Generated by CDK for the service integrations: lambda:InvokeFunction on "<fn>:*" (the five workflow functions, any version); ecs:StopTask/DescribeTasks on the shard cluster\'s tasks (task ids are known at run time); X-Ray and CloudWatch Logs delivery actions, which support no resource-level permission.',
          appliesTo: [
            { regex: '/^Resource::<Orchestrator[A-Za-z]+Function[0-9A-F]+\\.Arn>:\\*$/g' },
            { regex: '/^Resource::<GenerationBatchRoundFunction[0-9A-F]+\\.Arn>:\\*$/g' },
            { regex: '/^Resource::arn:<AWS::Partition>:ecs:<AWS::Region>:<AWS::AccountId>:task\\/<EvaluationCluster[0-9A-F]+>\\/\\*$/g' },
            'Resource::*',
          ],
        },
        {
          id: 'AwsSolutions-IAM5',
          reason:
            "Generated by CDK for the evaluation Distributed Map (issue 22): states:StartExecution/DescribeExecution/StopExecution on this state machine's own child executions (their names are made by the Map Run); s3:GetObject/PutObject on the artifacts bucket for the ItemReader (the run's shard manifest) and the ResultWriter (the Map Run's results), whose keys are JSON paths known only at run time; and ecs:RunTask on any revision of the shard task family, because each run pins the revision it started with.",
          appliesTo: [
            { regex: '/^Resource::arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:.*:\\*$/g' },
            { regex: '/^Resource::arn:<AWS::Partition>:s3:::<StorageArtifacts[0-9A-F]+>\\/\\*$/g' },
            { regex: '/^Resource::arn:<AWS::Partition>:ecs:<AWS::Region>:<AWS::AccountId>:task-definition\\/[A-Za-z0-9]+:\\*$/g' },
          ],
        },
      ],
      true,
    );
  }

  /** The shipped stages' function settings: sizes, timeouts and environments from the props. */
  private stageSettings(props: OrchestratorConstructProps): Partial<Record<StageName, StageFunctionSettings>> {
    const common = { RCB_TABLE: props.table.tableName, RCB_BUCKET: props.bucket.bucketName };
    const stack = Stack.of(this);
    const generationTimeoutSec = String((props.generationTimeout ?? DEFAULT_GENERATION_TIMEOUT).toSeconds());
    return {
      'plan-run': {
        memorySize: 1024,
        timeout: Duration.minutes(5),
        extraResources: props.modelsFile ? { [DEPLOYED_MODELS_FILE]: props.modelsFile } : undefined,
        environment: {
          ...common,
          RCB_LANE_QUEUES: stack.toJsonString(Object.fromEntries(props.lanes.map((l) => [l.name, l.queue.queueUrl]))),
          RCB_EVALUATION_READY: String(props.evaluationReady ?? true),
          // The evaluator a new run pins (core/cloud/plan-cloud-run.ts pinEvaluation): this deploy's revision.
          RCB_TASK_DEFINITION: props.shardTask.taskDefinition.taskDefinitionArn,
          RCB_EVALUATION_IMAGE: props.shardTask.container.imageName,
          RCB_MAX_SHARDS: String(props.maxShards ?? MAX_SHARDS_DEFAULT),
          RCB_GENERATION_TIMEOUT_SEC: generationTimeoutSec,
        },
      },
      'check-progress': {
        timeout: Duration.minutes(1),
        environment: {
          ...common,
          RCB_GENERATION_TIMEOUT_SEC: generationTimeoutSec,
          RCB_POLL_MIN_SEC: String((props.generationPollInterval ?? Duration.seconds(DEFAULT_POLL_SCHEDULE.minSec)).toSeconds()),
          RCB_POLL_MAX_SEC: String((props.generationPollMaxInterval ?? Duration.seconds(DEFAULT_POLL_SCHEDULE.maxSec)).toSeconds()),
        },
      },
      aggregate: {
        memorySize: 1024,
        timeout: Duration.minutes(10),
        environment: common,
      },
      'mark-failed': {
        timeout: Duration.seconds(30),
        environment: common,
      },
    };
  }

  private buildDefinition(props: OrchestratorConstructProps, maxConcurrency: number): sfn.IChainable {
    const failurePath = this.failurePhase();
    const catchToFailed = (state: sfn.TaskStateBase): void => {
      state.addCatch(failurePath, { errors: [sfn.Errors.ALL], resultPath: '$.failure' });
    };

    const planRun = lambdaTask(this, 'PlanRun', {
      stateName: STATE_NAMES.planRun,
      comment: 'Validate the spec, write tasks, refuse a spec over budget, enqueue generation',
      lambdaFunction: this.planRun.live,
      // No payload: the whole execution input ({ runId, spec, force? }) is the event.
      payloadResponseOnly: true,
      resultPath: '$.plan',
    });
    catchToFailed(planRun);

    const aggregate = lambdaTask(this, 'Aggregate', {
      stateName: STATE_NAMES.aggregate,
      comment: 'Scores, reports to S3, summary item, final run status',
      lambdaFunction: this.aggregate.live,
      // The execution's waves recorded their Map Runs' results: the shards that failed every attempt become infra_error.
      payload: sfn.TaskInput.fromObject({ runId: sfn.JsonPath.stringAt('$.runId'), execution: sfn.JsonPath.stringAt('$$.Execution.Name') }),
      payloadResponseOnly: true,
      resultPath: '$.summary',
    });
    catchToFailed(aggregate);

    const succeeded = new sfn.Succeed(this, 'RunSucceeded', { stateName: STATE_NAMES.succeeded });
    const generate = new sfn.Parallel(this, 'Generate', {
      stateName: STATE_NAMES.generate,
      comment: "The SQS lanes' progress loop beside the batch lane; a failure of either (its deadline, a round that keeps failing) fails the run",
      resultPath: sfn.JsonPath.DISCARD,
    });
    generate.branch(this.generationPhase(props, maxConcurrency));
    generate.branch(this.batchPhase(props));
    generate.addCatch(failurePath, { errors: [sfn.Errors.ALL], resultPath: '$.failure' });
    let chain = planRun.next(generate).next(aggregate);
    for (const task of this.afterAggregate(props.stages ?? CLOUD_STAGES)) {
      catchToFailed(task);
      chain = chain.next(task);
    }
    return chain.next(succeeded);
  }

  /**
   * The Task states of the table's `after-aggregate` stages, in table order: each is given the
   * run id and the execution name, and its result is discarded (a stage a deployment adds
   * after scoring; docs: CONTRIBUTING.md "Add a cloud stage").
   */
  private afterAggregate(stages: StageTable): tasks.LambdaInvoke[] {
    return Object.entries(stages)
      .filter(([, stage]) => 'placement' in stage.trigger && stage.trigger.placement === 'after-aggregate')
      .map(([name, stage]) =>
        lambdaTask(this, stateOf(stage)!, {
          stateName: stateOf(stage)!,
          comment: stage.function.description,
          lambdaFunction: requiredStageFunction(this.functions, name, 'orchestrator').live,
          payload: sfn.TaskInput.fromObject({ runId: sfn.JsonPath.stringAt('$.runId'), execution: sfn.JsonPath.stringAt('$$.Execution.Name') }),
          payloadResponseOnly: true,
          resultPath: sfn.JsonPath.DISCARD,
        }),
      );
  }

  /**
   * The batch lane (BatchLaneConstruct) when PlanRun left tasks to it (`$.plan.batchTasks`);
   * otherwise nothing, so a run without batch-mode models invokes no batch function.
   */
  private batchPhase(props: OrchestratorConstructProps): sfn.IChainable {
    const lane = new BatchLaneConstruct(this, 'BatchLane', { batchRound: props.batchRound });
    return (
      new sfn.Choice(this, 'BatchLaneChoice', { stateName: STATE_NAMES.batchLane })
        // A plan without the field (a PlanRun deployed before the lane) has no batch tasks.
        .when(sfn.Condition.and(sfn.Condition.isPresent('$.plan.batchTasks'), sfn.Condition.numberGreaterThan('$.plan.batchTasks', 0)), lane)
        .otherwise(new sfn.Pass(this, 'NoBatchLane', { stateName: STATE_NAMES.noBatchLane }))
    );
  }

  /**
   * StartWaves → CheckProgress → GenerationDone? → (EvaluateShards →) Wait → CheckProgress ...:
   * each check counts the settled tasks and writes the shards newly ready (every task settled)
   * as the next wave, which the loop evaluates at once, while other models still generate
   * (pipelined evaluation, core/cloud/evaluation-waves.ts); once generation is over the shards
   * left are the last wave, and the loop ends when every shard has been in one. Batch answers
   * count as the SQS lanes' do. CheckProgress owns the deadline and the pause
   * (`$.progress.waitSec`, growing with the run's age and stretched to its deadline), so the
   * loop's checks, and so its waves (at most one per check), stay bounded
   * (test/infra/history-bound.test.ts computes the bound). Failures are caught by the Parallel.
   */
  private generationPhase(props: OrchestratorConstructProps, maxConcurrency: number): sfn.IChainable {
    const start = new sfn.Pass(this, 'StartWaves', {
      stateName: STATE_NAMES.startWaves,
      comment: 'No wave dispatched yet: the state the first check reads',
      result: sfn.Result.fromObject({ waves: 0 }),
      resultPath: '$.progress',
    });
    const wait = new sfn.Wait(this, 'WaitForGeneration', {
      stateName: STATE_NAMES.waitForGeneration,
      time: sfn.WaitTime.secondsPath('$.progress.waitSec'),
    });
    const check = lambdaTask(this, 'CheckProgress', {
      stateName: STATE_NAMES.checkProgress,
      comment: 'Count settled tasks of the run, write the next wave of ready shards; fail the run past its generation deadline',
      lambdaFunction: this.checkProgress.live,
      // The execution's start, not the run's creation: a run started again gets its own deadline.
      // The run's deadline is PlanRun's (the run's own --deadline, else the stack's). The
      // previous check's result (and the Map Run of the wave it dispatched) says which waves ran.
      payload: sfn.TaskInput.fromObject({
        runId: sfn.JsonPath.stringAt('$.runId'),
        startedAt: sfn.JsonPath.stringAt('$$.Execution.StartTime'),
        deadlineSec: sfn.JsonPath.numberAt('$.plan.deadlineSec'),
        execution: sfn.JsonPath.stringAt('$$.Execution.Name'),
        previous: sfn.JsonPath.objectAt('$.progress'),
      }),
      payloadResponseOnly: true,
      resultPath: '$.progress',
    });
    const evaluate = this.evaluationPhase(props, maxConcurrency);
    evaluate.next(wait);
    const done = new sfn.Choice(this, 'GenerationDone', { stateName: STATE_NAMES.generationDone })
      .when(sfn.Condition.isPresent('$.progress.wave'), evaluate)
      .when(sfn.Condition.booleanEquals('$.progress.done', true), new sfn.Pass(this, 'LanesSettled', { stateName: STATE_NAMES.lanesSettled }))
      .otherwise(wait);
    wait.next(check);
    return start.next(check).next(done);
  }

  /**
   * A Distributed Map over one wave of ready shards, as CheckProgress wrote it to the bucket
   * (ItemReader: a JSON array at `$.progress.wave.key`), each shard its own Standard child
   * execution, so the run's history holds a Map Run's few events per wave whatever the sweep
   * and each child's history holds one shard's. A shard is an ECS RunTask `.sync` on Fargate Spot of the run's pinned task
   * definition revision; capacity errors are retried with backoff, a shard Spot cannot run
   * (no capacity, or interrupted twice) moves to on-demand Fargate, and one that fails there
   * too fails its child execution only (ShardFailed): every failure is tolerated, the
   * ResultWriter lists the failed children in the bucket and Aggregate records their tasks
   * infra_error.
   */
  private evaluationPhase(props: OrchestratorConstructProps, maxConcurrency: number): sfn.DistributedMap {
    const { shardTask } = props;
    const runShard = (id: string, stateName: string, capacityProvider: 'FARGATE_SPOT' | 'FARGATE'): tasks.EcsRunTask =>
      new ShardRunTask(this, id, {
        stateName,
        comment: `Evaluate one shard's candidates on ${capacityProvider}`,
        integrationPattern: sfn.IntegrationPattern.RUN_JOB,
        cluster: shardTask.cluster,
        taskDefinition: shardTask.taskDefinition,
        taskDefinitionArnPath: '$.taskDefinitionArn',
        tagPaths: { run: '$.runId', execution: '$.execution', shard: '$.paperTag' },
        launchTarget: new tasks.EcsFargateLaunchTarget({
          platformVersion: ecs.FargatePlatformVersion.LATEST,
          capacityProviderOptions: tasks.CapacityProviderOptions.custom([{ capacityProvider, weight: 1 }]),
        }),
        assignPublicIp: false,
        subnets: shardTask.subnets,
        securityGroups: shardTask.securityGroups,
        propagatedTagSource: ecs.PropagatedTagSource.TASK_DEFINITION,
        containerOverrides: [
          {
            containerDefinition: shardTask.container,
            environment: [
              { name: 'RCB_RUN_ID', value: sfn.JsonPath.stringAt('$.runId') },
              { name: 'RCB_SHARD', value: sfn.JsonPath.stringAt('$.paper') },
              // The whole shard (paper, model, slice) as JSON: fields a shard may lack cannot be paths.
              { name: 'RCB_SHARD_REF', value: sfn.JsonPath.jsonToString(sfn.JsonPath.objectAt('$.shard')) },
            ],
          },
        ],
        taskTimeout: sfn.Timeout.duration(props.shardTimeout ?? Duration.hours(2)),
        resultPath: sfn.JsonPath.DISCARD,
      });
    const capacityRetry: sfn.RetryProps = {
      errors: CAPACITY_ERRORS,
      interval: Duration.seconds(30),
      maxAttempts: 4,
      backoffRate: 2,
      maxDelay: Duration.minutes(5),
      jitterStrategy: sfn.JitterType.FULL,
    };

    const onSpot = runShard('EvaluateShard', STATE_NAMES.evaluateShard, 'FARGATE_SPOT');
    onSpot.addRetry(capacityRetry);
    // A stopped task (Spot interruption, lost host) fails the .sync state with States.TaskFailed;
    // verdicts are written first-wins, so a rerun redoes only the candidates not yet judged.
    // A shard past its task timeout (States.Timeout: the task is stopped) is retried the same
    // way: verdicts already written stay, so the retry redoes only what was not judged.
    onSpot.addRetry({ errors: ['States.TaskFailed', 'States.Timeout'], interval: Duration.seconds(60), maxAttempts: 2, backoffRate: 2 });

    const onDemand = runShard('EvaluateShardOnDemand', STATE_NAMES.evaluateShardOnDemand, 'FARGATE');
    onDemand.addRetry(capacityRetry);
    onDemand.addRetry({ errors: ['States.TaskFailed', 'States.Timeout'], interval: Duration.seconds(60), maxAttempts: 1 });
    onSpot.addCatch(onDemand, { errors: [...CAPACITY_ERRORS, 'States.TaskFailed', 'States.Timeout'], resultPath: '$.spotFailure' });
    // The shard's child execution fails with the on-demand error; the Map tolerates it.
    const shardFailed = new sfn.Fail(this, 'ShardFailed', {
      stateName: STATE_NAMES.shardFailed,
      comment: 'This shard only: its tasks become infra_error, the other shards go on',
      errorPath: '$.shardFailure.Error',
      causePath: '$.shardFailure.Cause',
    });
    onDemand.addCatch(shardFailed, { errors: [sfn.Errors.ALL], resultPath: '$.shardFailure' });

    const map = new sfn.DistributedMap(this, 'EvaluateShards', {
      stateName: STATE_NAMES.evaluateShards,
      comment: 'One child execution and Fargate task per shard (paper x model, split when large); MaxConcurrency bounds tasks in flight per run',
      mapExecutionType: sfn.StateMachineType.STANDARD,
      itemReader: new sfn.S3JsonItemReader({ bucket: props.bucket, key: sfn.JsonPath.stringAt('$.progress.wave.key') }),
      itemSelector: {
        runId: sfn.JsonPath.stringAt('$.runId'),
        // The parent's execution name: the tag that tells a run's attempts apart.
        execution: sfn.JsonPath.stringAt('$$.Execution.Name'),
        paper: sfn.JsonPath.stringAt('$$.Map.Item.Value.paper'),
        // The paper as an ECS tag value (core/cloud/ecs-tag-value.ts), written with the wave.
        paperTag: sfn.JsonPath.stringAt('$$.Map.Item.Value.tag'),
        shard: sfn.JsonPath.objectAt('$$.Map.Item.Value'),
        taskDefinitionArn: sfn.JsonPath.stringAt('$.plan.taskDefinitionArn'),
      },
      maxConcurrency,
      // A failed shard fails only itself (its child execution); the run goes on to Aggregate.
      toleratedFailurePercentage: 100,
      resultWriterV2: new sfn.ResultWriterV2({ bucket: props.bucket, prefix: MAP_RESULTS_PREFIX }),
      label: 'Shards',
      // Beside the check's result: the next check records where this wave's results are.
      resultPath: '$.progress.waveRun',
    });
    map.itemProcessor(onSpot);
    return map;
  }

  /** MarkRunFailed then RunFailed, reporting the original error even if marking fails. */
  private failurePhase(): sfn.IChainable {
    const failed = new sfn.Fail(this, 'RunFailed', {
      stateName: STATE_NAMES.failed,
      errorPath: '$.failure.Error',
      causePath: '$.failure.Cause',
    });
    const mark = lambdaTask(this, 'MarkRunFailed', {
      stateName: STATE_NAMES.markRunFailed,
      comment: 'Record the error on the run item; completions and verdicts already written stay',
      lambdaFunction: this.markRunFailed.live,
      payload: sfn.TaskInput.fromObject({
        runId: sfn.JsonPath.stringAt('$.runId'),
        failure: sfn.JsonPath.objectAt('$.failure'),
      }),
      payloadResponseOnly: true,
      resultPath: sfn.JsonPath.DISCARD,
    });
    mark.addCatch(failed, { errors: [sfn.Errors.ALL], resultPath: '$.markFailure' });
    return mark.next(failed);
  }
}
