import { Match } from 'aws-cdk-lib/assertions';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { DEFAULT_LANES } from '../../infra/config';
import { EVALUATOR_CONTAINER_NAME } from '../../infra/evaluation-construct';
import { pascal } from '../../infra/generation-construct';
import { NetworkConstruct } from '../../infra/network-construct';
import { CAPACITY_ERRORS, OrchestratorConstruct, type OrchestratorConstructProps, STATE_NAMES } from '../../infra/orchestrator-construct';
import { StorageConstruct } from '../../infra/storage-construct';
import {
  actionsOf,
  allStates,
  branchStates,
  constructStack,
  flatten,
  logicalIdStartingWith,
  oncePerProps,
  resourcesOfType,
  roleActions,
  roleStatements,
  stateMachineDefinition,
} from './helpers';

type OwnProps = Omit<OrchestratorConstructProps, 'table' | 'bucket' | 'lanes' | 'batchRound' | 'shardTask'>;

/**
 * The orchestrator on a stack of its own. What the generation and evaluation constructs
 * give it in the rcb stack is stood in for at the same paths (lane queues, a batch round
 * function, a cluster and a task definition of a registry image in the real network), so
 * the logical ids it refers to read as they do there.
 */
const orchestratorStack = oncePerProps(
  (props: OwnProps) =>
    constructStack((stack) => {
      const { table, bucket } = new StorageConstruct(stack, 'Storage');
      const generation = new Construct(stack, 'Generation');
      const lanes = DEFAULT_LANES.map((lane) => ({ name: lane.name, queue: new sqs.Queue(generation, `${pascal(lane.name)}Queue`) }));
      const batchRound = new lambda.Function(generation, 'BatchRoundFunction', {
        runtime: lambda.Runtime.NODEJS_22_X,
        handler: 'index.handler',
        code: lambda.Code.fromInline('exports.handler = async () => ({})'),
      });
      const network = new NetworkConstruct(new Construct(stack, 'Evaluation'), 'Default', { table, bucket });
      const evaluation = new Construct(network, 'Default');
      const cluster = new ecs.Cluster(evaluation, 'Cluster', { vpc: network.vpc });
      const taskRole = new iam.Role(evaluation, 'TaskRole', { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com') });
      const taskDefinition = new ecs.FargateTaskDefinition(evaluation, 'ShardTask', { taskRole });
      const container = taskDefinition.addContainer('Evaluator', {
        containerName: EVALUATOR_CONTAINER_NAME,
        image: ecs.ContainerImage.fromRegistry('rcb-evaluator'),
        logging: ecs.LogDrivers.awsLogs({ streamPrefix: 'shard', logGroup: network.taskLogGroup }),
      });
      const shardTask = { cluster, taskDefinition, container, subnets: network.taskSubnets, securityGroups: [network.taskSecurityGroup] };
      return new OrchestratorConstruct(stack, 'Orchestrator', { table, bucket, lanes, batchRound, shardTask, ...props });
    }),
  {},
);

/** What CheckProgress is given: the run, the execution's start, name and deadline, and the loop's last progress (its waves). */
const CHECK_PROGRESS_PARAMETERS = {
  'runId.$': '$.runId',
  'startedAt.$': '$$.Execution.StartTime',
  'deadlineSec.$': '$.plan.deadlineSec',
  'execution.$': '$$.Execution.Name',
  'previous.$': '$.progress',
};
describe('OrchestratorConstruct', () => {
  const definition = () => stateMachineDefinition(orchestratorStack().template);
  // The evaluation Map runs each wave inside the progress loop (the Generate Parallel's first branch).
  const shardStates = () => branchStates(definition().States[STATE_NAMES.generate])[0][STATE_NAMES.evaluateShards].ItemProcessor.States;

  describe('state machine', () => {
    it('is a standard workflow with ALL-level logging, execution data and X-Ray tracing', () => {
      const { template } = orchestratorStack();
      template.hasResourceProperties('AWS::StepFunctions::StateMachine', {
        StateMachineType: 'STANDARD',
        TracingConfiguration: { Enabled: true },
        LoggingConfiguration: {
          Level: 'ALL',
          IncludeExecutionData: true,
          Destinations: [{ CloudWatchLogsLogGroup: { LogGroupArn: Match.anyValue() } }],
        },
      });
    });

    it('has the stable state names the local runner binds by', () => {
      const top = Object.keys(definition().States).sort();
      expect(top).toEqual(
        [STATE_NAMES.planRun, STATE_NAMES.generate, STATE_NAMES.aggregate, STATE_NAMES.markRunFailed, STATE_NAMES.succeeded, STATE_NAMES.failed].sort(),
      );
      expect(Object.keys(shardStates()).sort()).toEqual([STATE_NAMES.evaluateShard, STATE_NAMES.evaluateShardOnDemand, STATE_NAMES.shardFailed].sort());
      const [lanes, batch] = branchStates(definition().States[STATE_NAMES.generate]);
      expect(Object.keys(lanes).sort()).toEqual(
        [
          STATE_NAMES.startWaves,
          STATE_NAMES.checkProgress,
          STATE_NAMES.generationDone,
          STATE_NAMES.evaluateShards,
          STATE_NAMES.waitForGeneration,
          STATE_NAMES.lanesSettled,
        ].sort(),
      );
      expect(Object.keys(batch).sort()).toEqual(
        [
          STATE_NAMES.batchLane,
          STATE_NAMES.noBatchLane,
          STATE_NAMES.batchRound,
          STATE_NAMES.batchesPending,
          STATE_NAMES.waitForBatches,
          STATE_NAMES.batchesDone,
        ].sort(),
      );
      expect(definition().StartAt).toBe('PlanRun');
    });

    it("generates in a Parallel: the SQS lanes' progress loop beside the batch lane, which runs only when PlanRun left it tasks", () => {
      const generate = definition().States.Generate;
      expect(definition().States.PlanRun.Next).toBe('Generate');
      expect(generate).toMatchObject({ Type: 'Parallel', ResultPath: null, Next: 'Aggregate' });
      const [lanes, batch] = generate.Branches;
      expect(lanes.StartAt).toBe('StartWaves');
      expect(batch.StartAt).toBe('BatchLane?');
      expect(batch.States['BatchLane?']).toEqual({
        Type: 'Choice',
        Choices: [
          {
            And: [
              { Variable: '$.plan.batchTasks', IsPresent: true },
              { Variable: '$.plan.batchTasks', NumericGreaterThan: 0 },
            ],
            Next: 'BatchRound',
          },
        ],
        Default: 'NoBatchLane',
      });
      expect(batch.States.BatchRound.Resource).toMatch(/^arn:aws:lambda:us-east-1:123456789012:function:GenerationBatchRound/);
      expect(batch.States.BatchRound.Parameters).toEqual({
        'runId.$': '$.runId',
        'startedAt.$': '$$.Execution.StartTime',
        'deadlineSec.$': '$.plan.deadlineSec',
      });
      expect(batch.States.WaitForBatches).toEqual({ Type: 'Wait', SecondsPath: '$.batch.waitSec', Next: 'BatchRound' });
    });

    it('loops CheckProgress -> GenerationDone? -> Wait (the pause CheckProgress chose) until $.progress.done, then evaluates', () => {
      const states = allStates(definition().States);
      expect(states.WaitForGeneration).toEqual({ Type: 'Wait', SecondsPath: '$.progress.waitSec', Next: 'CheckProgress' });
      expect(states.CheckProgress.Parameters).toEqual(CHECK_PROGRESS_PARAMETERS);
      expect(states.CheckProgress.Next).toBe('GenerationDone?');
      expect(states.CheckProgress.ResultPath).toBe('$.progress');
      expect(states['GenerationDone?']).toEqual({
        Type: 'Choice',
        Choices: [
          { Variable: '$.progress.wave', IsPresent: true, Next: 'EvaluateShards' },
          { Variable: '$.progress.done', BooleanEquals: true, Next: 'LanesSettled' },
        ],
        Default: 'WaitForGeneration',
      });
      // Pipelined: each wave is evaluated inside the loop, then the loop pauses and checks again.
      expect(states.EvaluateShards.Next).toBe('WaitForGeneration');
      expect(states.Generate.Next).toBe('Aggregate');
      expect(states.Aggregate.Next).toBe('RunSucceeded');
    });

    it('invokes the Lambda tasks directly (payloadResponseOnly) with explicit payloads', () => {
      const states = allStates(definition().States);
      for (const name of ['PlanRun', 'CheckProgress', 'Aggregate', 'MarkRunFailed']) {
        expect(states[name].Type).toBe('Task');
        expect(states[name].Resource).toMatch(/^arn:aws:lambda:us-east-1:123456789012:function:Orchestrator/);
      }
      expect(states.PlanRun.Parameters).toBeUndefined();
      expect(states.PlanRun.ResultPath).toBe('$.plan');
      expect(states.CheckProgress.Parameters).toEqual(CHECK_PROGRESS_PARAMETERS);
      expect(states.Aggregate.Parameters).toEqual({ 'runId.$': '$.runId', 'execution.$': '$$.Execution.Name' });
      expect(states.MarkRunFailed.Parameters).toEqual({ 'runId.$': '$.runId', 'failure.$': '$.failure' });
    });

    it('maps over the shard manifest (ItemReader) with MaxConcurrency and hands each shard { runId, execution, paper, shard, taskDefinitionArn }', () => {
      const map = allStates(definition().States).EvaluateShards;
      expect(map.Type).toBe('Map');
      expect(map.MaxConcurrency).toBe(10);
      expect(map.ItemsPath).toBeUndefined();
      expect(map.ItemReader.Parameters['Key.$']).toBe('$.progress.wave.key');
      expect(map.ItemSelector).toEqual({
        'runId.$': '$.runId',
        'execution.$': '$$.Execution.Name',
        'paper.$': '$$.Map.Item.Value.paper',
        'paperTag.$': '$$.Map.Item.Value.tag',
        'shard.$': '$$.Map.Item.Value',
        'taskDefinitionArn.$': '$.plan.taskDefinitionArn',
      });
      expect(map.ResultPath).toBe('$.progress.waveRun');
      expect(map.ItemProcessor.StartAt).toBe('EvaluateShard');
      expect(
        stateMachineDefinition(orchestratorStack({ evaluationMaxConcurrency: 3 }).template).States.Generate.Branches[0].States.EvaluateShards.MaxConcurrency,
      ).toBe(3);
      expect(() => orchestratorStack({ evaluationMaxConcurrency: 10_001 })).toThrow(/evaluationMaxConcurrency must be an integer in 1..10000/);
    });

    it('runs each shard as an ECS RunTask .sync on Fargate Spot, private, with the shard in containerOverrides', () => {
      const shard = shardStates().EvaluateShard;
      expect(shard.Resource).toBe('arn:aws:states:::ecs:runTask.sync');
      expect(shard.Parameters.CapacityProviderStrategy).toEqual([{ CapacityProvider: 'FARGATE_SPOT', Weight: 1 }]);
      expect(shard.Parameters.LaunchType).toBeUndefined();
      expect(shard.Parameters.NetworkConfiguration.AwsvpcConfiguration.AssignPublicIp).toBeUndefined();
      expect(shard.Parameters.Overrides).toEqual({
        ContainerOverrides: [
          {
            Name: 'evaluator',
            Environment: [
              { Name: 'RCB_RUN_ID', 'Value.$': '$.runId' },
              { Name: 'RCB_SHARD', 'Value.$': '$.paper' },
              { Name: 'RCB_SHARD_REF', 'Value.$': 'States.JsonToString($.shard)' },
            ],
          },
        ],
      });
      expect(shard.TimeoutSeconds).toBe(7200);
      expect(shard.ResultPath).toBeNull();
    });

    it('places shard tasks in the isolated subnets with the task security group and no public IP', () => {
      const { template } = orchestratorStack();
      const [machine] = Object.values(resourcesOfType(template, 'AWS::StepFunctions::StateMachine'));
      const text = flatten(machine.Properties?.DefinitionString);
      const subnets = Object.keys(resourcesOfType(template, 'AWS::EC2::Subnet')).sort();
      const sg = logicalIdStartingWith(template, 'AWS::EC2::SecurityGroup', 'EvaluationTaskSecurityGroup');
      expect(text).toContain(`"AwsvpcConfiguration":{"Subnets":["\${${subnets[0]}}","\${${subnets[1]}}"],"SecurityGroups":["\${${sg}.GroupId}"]}`);
      expect(text).not.toContain('AssignPublicIp');
    });

    it('retries capacity errors with backoff and falls back from Spot to on-demand Fargate', () => {
      const { EvaluateShard: spot, EvaluateShardOnDemand: onDemand } = shardStates();
      expect(spot.Retry).toEqual([
        {
          ErrorEquals: CAPACITY_ERRORS,
          IntervalSeconds: 30,
          MaxAttempts: 4,
          BackoffRate: 2,
          MaxDelaySeconds: 300,
          JitterStrategy: 'FULL',
        },
        { ErrorEquals: ['States.TaskFailed', 'States.Timeout'], IntervalSeconds: 60, MaxAttempts: 2, BackoffRate: 2 },
      ]);
      expect(CAPACITY_ERRORS).toEqual(expect.arrayContaining(['AmazonECS.Unknown', 'ECS.AmazonECSException']));
      expect(spot.Catch).toEqual([
        { ErrorEquals: [...CAPACITY_ERRORS, 'States.TaskFailed', 'States.Timeout'], ResultPath: '$.spotFailure', Next: 'EvaluateShardOnDemand' },
      ]);
      expect(onDemand.Resource).toBe('arn:aws:states:::ecs:runTask.sync');
      expect(onDemand.Parameters.CapacityProviderStrategy).toEqual([{ CapacityProvider: 'FARGATE', Weight: 1 }]);
      expect(onDemand.Retry[0].ErrorEquals).toEqual(CAPACITY_ERRORS);
      // A shard past its task timeout is retried like a stopped one, on-demand too.
      expect(onDemand.Retry[1]).toEqual({ ErrorEquals: ['States.TaskFailed', 'States.Timeout'], IntervalSeconds: 60, MaxAttempts: 1 });
      expect(onDemand.Parameters.Overrides).toEqual(spot.Parameters.Overrides);
    });

    it('sends any failure of PlanRun, the generation Parallel (CheckProgress, a batch round), EvaluateShards or Aggregate to MarkRunFailed, then RunFailed', () => {
      const states = definition().States;
      // EvaluateShards runs in the Generate branch (pipelined waves): the Parallel's Catch covers it.
      for (const name of ['PlanRun', 'Generate', 'Aggregate']) {
        expect(states[name].Catch).toEqual([{ ErrorEquals: ['States.ALL'], ResultPath: '$.failure', Next: 'MarkRunFailed' }]);
      }
      // Inside the branches nothing catches: a failure fails the Parallel, whose Catch runs MarkRunFailed.
      for (const branch of branchStates(states.Generate)) for (const state of Object.values(branch)) expect(state.Catch).toBeUndefined();
      expect(states.MarkRunFailed.Next).toBe('RunFailed');
      expect(states.MarkRunFailed.ResultPath).toBeNull();
      expect(states.MarkRunFailed.Catch).toEqual([{ ErrorEquals: ['States.ALL'], ResultPath: '$.markFailure', Next: 'RunFailed' }]);
      expect(states.RunFailed).toEqual({ Type: 'Fail', ErrorPath: '$.failure.Error', CausePath: '$.failure.Cause' });
    });
  });

  describe('state machine role', () => {
    it('may run any revision of the shard task definition family (a run is pinned to one) and pass only the task and execution roles', () => {
      const { template } = orchestratorStack();
      const role = logicalIdStartingWith(template, 'AWS::IAM::Role', 'OrchestratorRunWorkflowRole');
      const statements = roleStatements(template, role);
      const runTask = statements.filter((s) => actionsOf(s).includes('ecs:RunTask'));
      expect(runTask).toHaveLength(1);
      expect(flatten(runTask[0].Resource)).toMatch(/:task-definition\/.*:\*$/);
      const tag = statements.filter((s) => actionsOf(s).includes('ecs:TagResource'));
      expect(tag.map((s) => s.Condition)).toEqual([{ StringEquals: { 'ecs:CreateAction': 'RunTask' } }]);
      const cluster = logicalIdStartingWith(template, 'AWS::ECS::Cluster', 'EvaluationCluster');
      expect(runTask[0].Condition).toEqual({ ArnEquals: { 'ecs:cluster': { 'Fn::GetAtt': [cluster, 'Arn'] } } });
      const passRole = statements.filter((s) => actionsOf(s).includes('iam:PassRole'));
      expect(passRole).toHaveLength(1);
      expect(passRole[0].Condition).toEqual({ StringEquals: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } });
      expect(flatten(passRole[0].Resource).split(',').sort()).toEqual(
        [
          `\${${logicalIdStartingWith(template, 'AWS::IAM::Role', 'EvaluationShardTaskExecutionRole')}.Arn}`,
          `\${${logicalIdStartingWith(template, 'AWS::IAM::Role', 'EvaluationTaskRole')}.Arn}`,
        ].sort(),
      );
      const invoke = statements.filter((s) => actionsOf(s).includes('lambda:InvokeFunction'));
      const invoked = new Set(invoke.flatMap((s) => flatten(s.Resource).split(',')).map((r) => r.replace(/:\*$/, '')));
      // Only the orchestrator's `live` aliases (docs/cloud.md, "Pins"); the stand-in batch round is a bare function here.
      expect([...invoked].sort()).toEqual(
        [
          ...['PlanRunFunction', 'CheckProgressFunction', 'AggregateFunction', 'MarkRunFailedFunction'].map(
            (f) => `\${${logicalIdStartingWith(template, 'AWS::Lambda::Alias', `Orchestrator${f}Aliaslive`)}}`,
          ),
          `\${${logicalIdStartingWith(template, 'AWS::Lambda::Function', 'GenerationBatchRoundFunction')}.Arn}`,
        ].sort(),
      );
    });

    it("may stop and describe the shard cluster's tasks only", () => {
      const { template } = orchestratorStack();
      const role = logicalIdStartingWith(template, 'AWS::IAM::Role', 'OrchestratorRunWorkflowRole');
      const cluster = logicalIdStartingWith(template, 'AWS::ECS::Cluster', 'EvaluationCluster');
      const statements = roleStatements(template, role).filter((s) => actionsOf(s).some((a) => a === 'ecs:StopTask' || a === 'ecs:DescribeTasks'));
      expect(statements).toHaveLength(1);
      expect(actionsOf(statements[0]).sort()).toEqual(['ecs:DescribeTasks', 'ecs:StopTask']);
      expect(flatten(statements[0].Resource)).toBe(`arn:\${AWS::Partition}:ecs:\${AWS::Region}:\${AWS::AccountId}:task/\${${cluster}}/*`);
      // Nothing else of the role is granted on "*" but what supports no resource (X-Ray, log delivery).
      const anywhere = roleStatements(template, role)
        .filter((s) => s.Resource === '*')
        .flatMap(actionsOf);
      expect(anywhere.filter((a) => !a.startsWith('xray:') && !a.startsWith('logs:'))).toEqual([]);
    });
  });

  describe('workflow functions', () => {
    const roleOf = (fn: string) => logicalIdStartingWith(orchestratorStack().template, 'AWS::IAM::Role', `Orchestrator${fn}FunctionRole`);

    it('PlanRun reads psets, writes run items (one conditional PutItem each, no BatchWriteItem) and artifacts and sends to the lane queues', () => {
      const { template } = orchestratorStack();
      expect(roleActions(template, roleOf('PlanRun'))).toEqual([
        'dynamodb:BatchGetItem',
        'dynamodb:DeleteItem',
        'dynamodb:GetItem',
        'dynamodb:PutItem',
        'dynamodb:Query',
        'dynamodb:UpdateItem',
        'logs:CreateLogStream',
        'logs:PutLogEvents',
        's3:GetObject',
        's3:ListBucket',
        's3:PutObject',
        's3:PutObjectTagging',
        'sqs:GetQueueAttributes',
        'sqs:GetQueueUrl',
        'sqs:SendMessage',
        'xray:PutTelemetryRecords',
        'xray:PutTraceSegments',
      ]);
      template.hasResourceProperties('AWS::Lambda::Function', {
        Description: Match.stringLikeRegexp('validates a run spec'),
        Environment: {
          Variables: Match.objectLike({ RCB_LANE_QUEUES: Match.anyValue(), RCB_EVALUATION_READY: 'true' }),
        },
      });
    });

    it('CheckProgress reads the run from the table and writes waves under runs/: no queue access, no queue URLs', () => {
      const { template } = orchestratorStack();
      const actions = roleActions(template, roleOf('CheckProgress'));
      expect(actions.filter((a) => a.startsWith('sqs:'))).toEqual([]);
      // The execution's shard manifest read, its waves written (pipelined evaluation); no listing.
      // Its writes carry the run's cost-allocation tag (core/cloud/object-tags.ts).
      expect(actions.filter((a) => a.startsWith('s3:')).sort()).toEqual(['s3:GetObject', 's3:PutObject', 's3:PutObjectTagging']);
      expect(actions.filter((a) => a.startsWith('dynamodb:')).sort()).toEqual([
        'dynamodb:BatchGetItem',
        'dynamodb:GetItem',
        'dynamodb:Query',
        'dynamodb:UpdateItem',
      ]);
      const fn = Object.values(
        template.findResources('AWS::Lambda::Function', { Properties: { Description: Match.stringLikeRegexp('reports whether every task') } }),
      )[0] as {
        Properties: { Environment: { Variables: Record<string, unknown> } };
      };
      expect(fn.Properties.Environment.Variables.RCB_GENERATION_TIMEOUT_SEC).toBe('86400');
      expect(Object.keys(fn.Properties.Environment.Variables)).not.toEqual(expect.arrayContaining(['RCB_LANE_QUEUES']));
      expect(Object.keys(fn.Properties.Environment.Variables)).not.toEqual(expect.arrayContaining(['RCB_LANE_DLQS']));
    });

    it('MarkRunFailed may only read and update items under RUN# partitions', () => {
      const { template } = orchestratorStack();
      const statements = roleStatements(template, roleOf('MarkRunFailed')).filter((s) => actionsOf(s).some((a) => a.startsWith('dynamodb:')));
      expect(statements).toHaveLength(1);
      expect(actionsOf(statements[0]).sort()).toEqual(['dynamodb:GetItem', 'dynamodb:UpdateItem']);
      expect(statements[0].Condition).toEqual({ 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['RUN#*'] } });
    });
  });
});
