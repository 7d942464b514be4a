import { CfnOutput, Duration, Stack, type StackProps, Tags } from 'aws-cdk-lib';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import { Construct } from 'constructs';
import type { RcbDeployConfig, RcbOptions } from './config';
import { EvaluationConstruct } from './evaluation-construct';
import { DEFAULT_GENERATION_TIMEOUT, GenerationConstruct, pascal } from './generation-construct';
import { MonitoringConstruct } from './monitoring-construct';
import { NetworkConstruct } from './network-construct';
import { OrchestratorConstruct } from './orchestrator-construct';
import { StorageConstruct } from './storage-construct';
import { CLOUD_STAGES, type StageTable } from '../app/stages';
import { MEASURED_IMAGE_SIZE, shardEphemeralStorageGiB } from './ephemeral-storage';
import { reserveConcurrency } from './reserved-concurrency';
import { TeamAccessConstruct } from './team-access-construct';
import { RunEventsConstruct } from './run-events-construct';
import { ScheduleConstruct } from './schedule-construct';

/**
 * Cost-allocation tags every taggable resource of the stack carries (`Tags.of`), so that Cost
 * Explorer splits the stack's spend by stack and by part once they are activated (docs/cloud.md).
 * Shard tasks add the run's own (`rcb:run`, `rcb:sweep`) when they are started; S3 objects of a
 * run carry `rcb:run` (adapters/aws/s3-blob-store.ts).
 */
export const COST_ALLOCATION_TAGS = { project: 'rcb:project', stack: 'rcb:stack', component: 'rcb:component' } as const;

/** The stack's props: CloudFormation's own, the rcb options of config.ts, and the stage table. */
export interface RcbStackProps extends StackProps, RcbOptions {
  /**
   * The cloud stages: a function, its alarms and (for a workflow stage) its Task state each.
   * @default CLOUD_STAGES (app/stages/index.ts)
   */
  readonly stages?: StageTable;
}

/** Builds the stack props from the validated context, environment-agnostic unless account/region are given. */
export function stackPropsFromConfig(config: RcbDeployConfig): RcbStackProps {
  const { stackName, account, region, ...rest } = config;
  return {
    stackName,
    description: 'rcb: ResearchCodeBench cloud pipeline (Step Functions, SQS lanes, Lambda, Fargate, DynamoDB, S3)',
    ...(account || region ? { env: { account, region } } : {}),
    ...rest,
  };
}

/** The rcb cloud pipeline of ARCHITECTURE.md, composed from one construct per concern. */
export class RcbStack extends Stack {
  public readonly storage: StorageConstruct;
  public readonly generation: GenerationConstruct;
  public readonly network: NetworkConstruct;
  public readonly evaluation: EvaluationConstruct;
  public readonly orchestrator: OrchestratorConstruct;
  public readonly monitoring: MonitoringConstruct;
  public readonly teamAccess: TeamAccessConstruct;
  public readonly runEvents: RunEventsConstruct;
  public readonly schedules: ScheduleConstruct;

  constructor(scope: Construct, id: string, props: RcbStackProps = {}) {
    super(scope, id, props);
    const interfaceEndpoints = props.interfaceEndpoints ?? true;
    const stages = props.stages ?? CLOUD_STAGES;

    const { table, bucket } = (this.storage = new StorageConstruct(this, 'Storage', {
      artifactRetentionDays: props.artifactRetentionDays,
      retainData: props.retainData,
    }));
    const generationTimeout = DEFAULT_GENERATION_TIMEOUT;
    this.generation = new GenerationConstruct(this, 'Generation', {
      table,
      bucket,
      lanes: props.lanes,
      generatorTimeout: props.generatorTimeoutSec ? Duration.seconds(props.generatorTimeoutSec) : undefined,
      generationTimeout,
      bedrockResourceArns: props.bedrockResourceArns,
      bedrockBatch: props.bedrockBatch,
      modelsFile: props.modelsFile,
      stages,
    });
    // The network and the shard task were one construct, 'Evaluation'. Construct ids named
    // 'Default' are left out of logical ids, so under it both keep the ids their resources
    // were deployed with: an existing stack updates in place instead of replacing its VPC.
    const evaluationScope = new Construct(this, 'Evaluation');
    this.network = new NetworkConstruct(evaluationScope, 'Default', {
      bucket,
      table,
      interfaceEndpoints,
      endpointAzCount: props.endpointAzCount,
      dnsFirewall: props.dnsFirewall,
    });
    this.evaluation = new EvaluationConstruct(this.network, 'Default', {
      table,
      bucket,
      vpc: this.network.vpc,
      logGroup: this.network.taskLogGroup,
      cpu: props.taskCpu,
      memoryMiB: props.taskMemoryMiB,
      cpuArchitecture: props.cpuArchitecture === 'ARM64' ? ecs.CpuArchitecture.ARM64 : ecs.CpuArchitecture.X86_64,
      image: props.image,
      ephemeralStorageGiB: shardEphemeralStorageGiB(
        { unpackedMB: props.imageUnpackedMB ?? MEASURED_IMAGE_SIZE.unpackedMB, compressedMB: props.imageCompressedMB ?? MEASURED_IMAGE_SIZE.compressedMB },
        props.shardScratchGiB,
      ),
    });
    this.orchestrator = new OrchestratorConstruct(this, 'Orchestrator', {
      table,
      bucket,
      lanes: this.generation.lanes.map((lane) => ({ name: lane.config.name, queue: lane.queue })),
      batchRound: this.generation.batchRound.live,
      shardTask: {
        cluster: this.evaluation.cluster,
        taskDefinition: this.evaluation.taskDefinition,
        container: this.evaluation.container,
        subnets: this.network.taskSubnets,
        securityGroups: [this.network.taskSecurityGroup],
      },
      generationTimeout,
      evaluationMaxConcurrency: props.evaluationMaxConcurrency,
      maxShards: props.maxShards,
      evaluationReady: interfaceEndpoints,
      modelsFile: props.modelsFile,
      stages,
    });
    const o = this.orchestrator;
    // The versions this deploy published, which a new run records in its pin
    // (core/cloud/plan-cloud-run.ts pinEvaluation; docs/cloud.md, "Pins: a deploy during a run").
    // PlanRun's own is its invocation's version: naming it here would make its hash depend on itself.
    const pinned = Object.entries({ ...this.generation.functions, ...o.functions }).filter(([name]) => name !== 'plan-run');
    o.planRun.function.addEnvironment(
      'RCB_FUNCTION_VERSIONS',
      Stack.of(this).toJsonString(Object.fromEntries(pinned.map(([name, fn]) => [name, fn.live.version.functionArn]))),
    );
    reserveConcurrency([o.planRun.function, o.checkProgress.function, o.aggregate.function, o.markRunFailed.function], props.orchestrationReservedConcurrency);
    this.monitoring = new MonitoringConstruct(this, 'Monitoring', {
      lanes: this.generation.lanes.map((lane) => ({ name: lane.config.name, queue: lane.queue, deadLetterQueue: lane.deadLetterQueue })),
      stateMachine: this.orchestrator.stateMachine,
      table,
      cluster: this.evaluation.cluster,
      // Every stage of the table, in its order, under its entry's monitoring name.
      functions: Object.entries(stages).map(([name, stage]) => ({
        name: stage.monitoring.name,
        fn: (this.generation.functions[name] ?? this.orchestrator.functions[name]).function,
      })),
      alarmEmail: props.alarmEmail,
      maxMessageAge: props.maxMessageAgeSec ? Duration.seconds(props.maxMessageAgeSec) : undefined,
    });

    this.runEvents = new RunEventsConstruct(this, 'RunEvents', {
      publishers: [this.orchestrator.aggregate.function, this.orchestrator.markRunFailed.function],
      summaryTopic: this.monitoring.alarmTopic,
    });
    this.schedules = new ScheduleConstruct(this, 'Schedules', { stateMachine: this.orchestrator.stateMachine });
    this.teamAccess = new TeamAccessConstruct(this, 'TeamAccess', {
      table,
      bucket,
      stateMachine: this.orchestrator.stateMachine,
      keysSecret: this.generation.keysSecret,
      scheduleStatements: this.schedules.runnerStatements(),
    });

    Tags.of(this).add(COST_ALLOCATION_TAGS.project, 'rcb');
    Tags.of(this).add(COST_ALLOCATION_TAGS.stack, this.stackName);
    for (const [part, component] of [
      [this.storage, 'storage'],
      [this.generation, 'generation'],
      [evaluationScope, 'evaluation'],
      [this.orchestrator, 'orchestrator'],
      [this.monitoring, 'monitoring'],
    ] as const) {
      Tags.of(part).add(COST_ALLOCATION_TAGS.component, component);
    }

    this.addOutputs();
  }

  private addOutputs(): void {
    new CfnOutput(this, 'ArtifactsBucketName', { value: this.storage.bucket.bucketName, description: 'Artifacts bucket (psets/, runs/)' });
    new CfnOutput(this, 'RunsTableName', { value: this.storage.table.tableName, description: 'Single-table run store' });
    new CfnOutput(this, 'RunWorkflowArn', { value: this.orchestrator.stateMachine.stateMachineArn, description: 'Run workflow state machine' });
    new CfnOutput(this, 'ProviderKeysSecretArn', {
      value: this.generation.keysSecret.secretArn,
      description: 'Provider API keys (JSON); set with aws secretsmanager put-secret-value',
    });
    for (const lane of this.generation.lanes) {
      new CfnOutput(this, `LaneQueueUrl${pascal(lane.config.name)}`, {
        value: lane.queue.queueUrl,
        description: `Generation queue of the ${lane.config.name} lane (max concurrency ${lane.config.maxConcurrency})`,
      });
      new CfnOutput(this, `LaneDeadLetterQueueUrl${pascal(lane.config.name)}`, {
        value: lane.deadLetterQueue.queueUrl,
        description: `Dead-letter queue of the ${lane.config.name} lane`,
      });
    }
    new CfnOutput(this, 'ImageRepositoryUri', {
      value: this.evaluation.imageRepository.repositoryUri,
      description: 'Prebuilt evaluation images: rcb cloud push-image pushes here, then deploy with -c rcb:image=<printed reference>',
    });
    new CfnOutput(this, 'DashboardName', { value: this.monitoring.dashboard.dashboardName });
    new CfnOutput(this, 'AlarmTopicArn', {
      value: this.monitoring.alarmTopic.topicArn,
      description: 'Every alarm publishes here (KMS-encrypted); subscribe e-mail, chat or a pager',
    });
    new CfnOutput(this, 'ScheduleGroupName', { value: this.schedules.groupName, description: 'Schedules of rcb cloud schedule add' });
    new CfnOutput(this, 'ScheduleRoleArn', {
      value: this.schedules.role.roleArn,
      description: 'The role schedules start the run workflow with (it may start nothing else)',
    });
    new CfnOutput(this, 'RunnerPolicyArn', {
      value: this.teamAccess.runnerPolicy.managedPolicyArn,
      description: 'Attach to the roles that start, follow and cancel runs (docs/cloud.md#team-access)',
    });
    new CfnOutput(this, 'ReaderPolicyArn', {
      value: this.teamAccess.readerPolicy.managedPolicyArn,
      description: 'Attach to the roles that only read results and reports (docs/cloud.md#team-access)',
    });
  }
}
