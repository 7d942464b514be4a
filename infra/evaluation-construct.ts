import { Aws, Duration, IgnoreMode, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as cr from 'aws-cdk-lib/custom-resources';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecrAssets from 'aws-cdk-lib/aws-ecr-assets';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as route53resolver from 'aws-cdk-lib/aws-route53resolver';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { PROJECT_ROOT } from './rcb-function';
import { ARTIFACT_PREFIXES, EVALUATION_OUTPUT_PATTERN, StorageConstruct, TABLE_KEYS } from './storage-construct';
import { COUNTER_ATTRIBUTES, TABLE_ATTRIBUTES } from '../core/cloud/storage-layout';

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
 * compiles from may be here (core/, adapters/, container/, tsconfig.json, package files):
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
  /** Where the container reads its inputs and writes its verdicts. */
  readonly storage: StorageConstruct;
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
   * Create the ECR and CloudWatch Logs interface endpoints that let a task start without
   * internet. They are the only fixed cost of the stack; `false` parks it (runs cannot
   * start tasks until the endpoints are deployed again).
   * @default true
   */
  readonly interfaceEndpoints?: boolean;
  /**
   * Number of availability zones holding an interface endpoint network interface. One is
   * enough (tasks in the other zone reach it across zones); two survive a zone outage at
   * twice the hourly price.
   * @default 1
   */
  readonly endpointAzCount?: number;
  /**
   * CloudWatch Container Insights on the cluster (billed per task metric).
   * @default false
   */
  readonly containerInsights?: boolean;
  /**
   * A Route 53 Resolver DNS Firewall on the VPC that answers only the AWS endpoint names a
   * shard task needs and blocks every other query (NODATA), closing DNS as a way out
   * through the VPC resolver (which security groups do not filter).
   * @default false
   */
  readonly dnsFirewall?: boolean;
  /**
   * Retention of the container and VPC flow log groups.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
}

/**
 * Evaluation: an isolated VPC (no NAT, no internet gateway, no public IP), the endpoints a
 * Fargate task needs to start and to reach S3 and DynamoDB, an ECS cluster with Fargate
 * Spot and Fargate capacity providers, and the shard task definition.
 */
export class EvaluationConstruct extends Construct {
  public readonly vpc: ec2.Vpc;
  public readonly cluster: ecs.Cluster;
  public readonly taskDefinition: ecs.FargateTaskDefinition;
  public readonly container: ecs.ContainerDefinition;
  public readonly taskRole: iam.Role;
  /** Attached to every shard task: HTTPS to the endpoints only, nothing in. */
  public readonly taskSecurityGroup: ec2.SecurityGroup;
  public readonly taskSubnets: ec2.SubnetSelection;
  public readonly logGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: EvaluationConstructProps) {
    super(scope, id);
    const { storage } = props;
    const retention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;
    const arch = props.cpuArchitecture ?? ecs.CpuArchitecture.X86_64;

    this.vpc = new ec2.Vpc(this, 'Vpc', {
      ipAddresses: ec2.IpAddresses.cidr('10.64.0.0/16'),
      maxAzs: 2,
      natGateways: 0,
      subnetConfiguration: [{ name: 'evaluation', subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask: 20 }],
      restrictDefaultSecurityGroup: true,
    });
    this.taskSubnets = { subnetType: ec2.SubnetType.PRIVATE_ISOLATED };

    const flowLogGroup = new logs.LogGroup(this, 'FlowLogGroup', { retention, removalPolicy: RemovalPolicy.DESTROY });
    // Rejected flows are the interesting ones here: generated code trying to reach anything
    // but the endpoints. Accepted flows would only log image pulls and verdict writes.
    this.vpc.addFlowLog('RejectedFlows', {
      destination: ec2.FlowLogDestination.toCloudWatchLogs(flowLogGroup),
      trafficType: ec2.FlowLogTrafficType.REJECT,
    });

    this.taskSecurityGroup = new ec2.SecurityGroup(this, 'TaskSecurityGroup', {
      vpc: this.vpc,
      description: 'rcb shard tasks: HTTPS to the VPC endpoints only',
      allowAllOutbound: false,
    });
    // Its egress rules target tokens (prefix lists looked up at deploy time, the endpoints'
    // group), so each is its own SecurityGroupEgress resource; CloudFormation removes EC2's
    // default allow-all rule when the first is attached (what CDK's allowAllOutbound relies on).

    this.logGroup = new logs.LogGroup(this, 'TaskLogGroup', { retention, removalPolicy: RemovalPolicy.DESTROY });
    this.addGatewayEndpoints(storage);
    if (props.interfaceEndpoints ?? true) this.addInterfaceEndpoints(props.endpointAzCount ?? 1);
    if (props.dnsFirewall) this.addDnsFirewall();

    this.cluster = new ecs.Cluster(this, 'Cluster', {
      vpc: this.vpc,
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
      description: 'rcb shard task: reads a run\'s inputs, writes its verdicts and evaluation logs',
    });
    // What a shard reads (core/cloud/evaluate-shard.ts): its run's item, tasks and verdicts
    // (GetItem, Query on RUN#<runId>) and its tasks' completions (BatchGetItem on
    // TASK#<taskId>). No index: gsi1 lists every run, and run and task ids are hashes a
    // task cannot guess, so it reads only what it is told about. IAM cannot narrow to one
    // run: the run id is known at run time only.
    storage.grantTable(this.taskRole, ['dynamodb:GetItem', 'dynamodb:Query'], { leadingKeys: ['RUN#*'] });
    storage.grantTable(this.taskRole, ['dynamodb:BatchGetItem'], { leadingKeys: ['TASK#*'] });
    // What it writes: verdict items (first write wins) under the run's partition, nothing else.
    storage.grantTable(this.taskRole, ['dynamodb:PutItem'], { leadingKeys: ['RUN#*'] });
    // And the run's count of verdicts (ADD on the run item): that one attribute, no other.
    storage.grantTable(this.taskRole, ['dynamodb:UpdateItem'], {
      leadingKeys: ['RUN#*'],
      attributes: [TABLE_ATTRIBUTES.partitionKey, TABLE_ATTRIBUTES.sortKey, COUNTER_ATTRIBUTES.judged],
    });
    storage.grantArtifacts(this.taskRole, {
      read: [`${ARTIFACT_PREFIXES.psets}*`, `${ARTIFACT_PREFIXES.runs}*`],
      list: [`${ARTIFACT_PREFIXES.psets}*`],
      write: [EVALUATION_OUTPUT_PATTERN],
    });

    this.taskDefinition = new ecs.FargateTaskDefinition(this, 'ShardTask', {
      cpu: props.cpu ?? 2048,
      memoryLimitMiB: props.memoryMiB ?? 8192,
      runtimePlatform: { cpuArchitecture: arch, operatingSystemFamily: ecs.OperatingSystemFamily.LINUX },
      taskRole: this.taskRole,
      volumes: [{ name: 'scratch' }],
    });

    const linuxParameters = new ecs.LinuxParameters(this, 'LinuxParameters', { initProcessEnabled: true });
    linuxParameters.dropCapabilities(...droppedCapabilities());

    this.container = this.taskDefinition.addContainer('Evaluator', {
      containerName: EVALUATOR_CONTAINER_NAME,
      image: ecs.ContainerImage.fromAsset(PROJECT_ROOT, {
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
      logging: ecs.LogDrivers.awsLogs({ streamPrefix: 'shard', logGroup: this.logGroup }),
      environment: {
        RCB_TABLE: storage.table.tableName,
        RCB_BUCKET: storage.bucket.bucketName,
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
          reason:
            'Execution role: ecr:GetAuthorizationToken supports no resource-level permission (CDK grants it on "*" to pull the asset image).',
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
            'Object-key wildcards: the task reads psets/* and runs/* (its run id is only known at run time) and writes runs/*/evaluation/* only; its DynamoDB writes are limited to RUN#* partitions.',
          appliesTo: [
            { regex: '/^Resource::<StorageArtifacts[0-9A-F]+\\.Arn>\\/(psets|runs)\\/\\*$/g' },
            { regex: '/^Resource::<StorageArtifacts[0-9A-F]+\\.Arn>\\/runs\\/\\*\\/evaluation\\/\\*$/g' },
          ],
        },
      ],
      true,
    );
  }

  /**
   * Free gateway endpoints whose policies admit only this account's principals on this
   * stack's bucket and table (and ECR's layer bucket), and the task security group's HTTPS
   * egress to their prefix lists.
   */
  private addGatewayEndpoints(storage: StorageConstruct): void {
    const thisAccount = { StringEquals: { 'aws:PrincipalAccount': Aws.ACCOUNT_ID } };
    const s3Endpoint = this.vpc.addGatewayEndpoint('S3Endpoint', {
      service: ec2.GatewayVpcEndpointAwsService.S3,
      subnets: [this.taskSubnets],
    });
    // Without a policy the endpoint would carry requests to any bucket, including an
    // attacker's public one, or with someone else's keys: generated code could exfiltrate
    // through it.
    s3Endpoint.addToPolicy(
      new iam.PolicyStatement({
        sid: 'EcrImageLayers',
        // Layer downloads are signed by ECR, not by a principal of this account, so this one
        // statement cannot carry the account condition; it admits one AWS-owned bucket, read-only.
        principals: [new iam.AnyPrincipal()],
        actions: ['s3:GetObject'],
        resources: [`arn:${Aws.PARTITION}:s3:::prod-${Aws.REGION}-starport-layer-bucket/*`],
      }),
    );
    s3Endpoint.addToPolicy(
      new iam.PolicyStatement({
        sid: 'RcbArtifacts',
        principals: [new iam.AnyPrincipal()],
        actions: ['s3:GetObject', 's3:PutObject', 's3:ListBucket'],
        resources: [storage.bucket.bucketArn, storage.bucket.arnForObjects('*')],
        conditions: thisAccount,
      }),
    );

    const dynamoEndpoint = this.vpc.addGatewayEndpoint('DynamoDbEndpoint', {
      service: ec2.GatewayVpcEndpointAwsService.DYNAMODB,
      subnets: [this.taskSubnets],
    });
    dynamoEndpoint.addToPolicy(
      new iam.PolicyStatement({
        sid: 'RcbTable',
        principals: [new iam.AnyPrincipal()],
        // What the task role may do, and no more: the endpoint holds even a role granted more.
        actions: ['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
        resources: [storage.table.tableArn],
        conditions: thisAccount,
      }),
    );

    // The gateway endpoints are reached through the region's AWS-managed prefix lists, whose
    // ids an environment-agnostic template cannot hold: they are looked up at deploy time by
    // CDK's AwsCustomResource function (one per stack), with a role that can only log.
    const lookupLogGroup = new logs.LogGroup(this, 'PrefixListLookupLogGroup', {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const lookupRole = new iam.Role(this, 'PrefixListLookupRole', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: 'rcb: looks up the S3 and DynamoDB prefix lists at deploy time',
      inlinePolicies: {
        logs: new iam.PolicyDocument({
          statements: [new iam.PolicyStatement({ actions: ['logs:CreateLogStream', 'logs:PutLogEvents'], resources: [lookupLogGroup.logGroupArn] })],
        }),
      },
    });
    for (const [id, service] of [
      ['S3', 's3'],
      ['DynamoDb', 'dynamodb'],
    ] as const) {
      const lookup = new cr.AwsCustomResource(this, `${id}PrefixList`, {
        resourceType: 'Custom::GatewayPrefixList',
        onUpdate: {
          service: 'EC2',
          action: 'describePrefixLists',
          parameters: { Filters: [{ Name: 'prefix-list-name', Values: [`com.amazonaws.${Aws.REGION}.${service}`] }] },
          physicalResourceId: cr.PhysicalResourceId.of(`com.amazonaws.${Aws.REGION}.${service}`),
          outputPaths: ['PrefixLists.0.PrefixListId'],
        },
        // ec2:DescribePrefixLists supports no resource-level permission.
        policy: cr.AwsCustomResourcePolicy.fromSdkCalls({ resources: cr.AwsCustomResourcePolicy.ANY_RESOURCE }),
        installLatestAwsSdk: false,
        role: lookupRole,
        memorySize: 256,
        logGroup: lookupLogGroup,
      });
      NagSuppressions.addResourceSuppressions(
        lookup,
        [{ id: 'AwsSolutions-IAM5', reason: 'ec2:DescribePrefixLists supports no resource-level permission; the lookup reads the AWS-managed prefix list id of one service.', appliesTo: ['Resource::*'] }],
        true,
      );
      this.taskSecurityGroup.addEgressRule(
        ec2.Peer.prefixList(lookup.getResponseField('PrefixLists.0.PrefixListId')),
        ec2.Port.tcp(443),
        `HTTPS to the ${service} gateway endpoint`,
      );
    }
    const lookupFunction = Stack.of(this).node.tryFindChild(`AWS${cr.AwsCustomResource.PROVIDER_FUNCTION_UUID.replace(/-/g, '')}`);
    if (lookupFunction) {
      NagSuppressions.addResourceSuppressions(
        lookupFunction,
        [
          {
            id: 'Serverless-LambdaDLQ',
            reason: 'CloudFormation calls the lookup synchronously during a deploy; a failed call fails the deployment, so there is no asynchronous event to dead-letter.',
          },
          {
            id: 'Serverless-LambdaTracing',
            reason: 'A deploy-time lookup of two prefix list ids: its log group holds every call, and tracing would add nothing.',
          },
        ],
        true,
      );
    }
  }

  /**
   * ECR (API and registry) and CloudWatch Logs interface endpoints: what a Fargate task in a
   * subnet without internet needs to pull its image and ship its logs. Reachable from the
   * task security group only.
   */
  private addInterfaceEndpoints(azCount: number): void {
    const subnets = this.vpc.isolatedSubnets.slice(0, Math.max(1, Math.min(azCount, this.vpc.isolatedSubnets.length)));
    const endpointSecurityGroup = new ec2.SecurityGroup(this, 'EndpointSecurityGroup', {
      vpc: this.vpc,
      description: 'rcb interface endpoints: HTTPS from shard tasks only',
      allowAllOutbound: false,
    });
    endpointSecurityGroup.addIngressRule(this.taskSecurityGroup, ec2.Port.tcp(443), 'HTTPS from shard tasks');
    const services: Array<[string, ec2.InterfaceVpcEndpointAwsService]> = [
      ['EcrApiEndpoint', ec2.InterfaceVpcEndpointAwsService.ECR],
      ['EcrDockerEndpoint', ec2.InterfaceVpcEndpointAwsService.ECR_DOCKER],
      ['LogsEndpoint', ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_LOGS],
    ];
    const thisAccount = { StringEquals: { 'aws:PrincipalAccount': Aws.ACCOUNT_ID } };
    // Each endpoint carries only this account's principals, to what a task start needs: an
    // image pull from this account's repositories, log events to the task log group.
    const policies: Record<string, iam.PolicyStatement[]> = {
      EcrApiEndpoint: [
        new iam.PolicyStatement({
          sid: 'EcrAuthorization',
          principals: [new iam.AnyPrincipal()],
          actions: ['ecr:GetAuthorizationToken'],
          resources: ['*'],
          conditions: thisAccount,
        }),
        new iam.PolicyStatement({
          sid: 'EcrImagePull',
          principals: [new iam.AnyPrincipal()],
          actions: ['ecr:BatchGetImage', 'ecr:GetDownloadUrlForLayer', 'ecr:BatchCheckLayerAvailability'],
          resources: [`arn:${Aws.PARTITION}:ecr:${Aws.REGION}:${Aws.ACCOUNT_ID}:repository/*`],
          conditions: thisAccount,
        }),
      ],
      LogsEndpoint: [
        new iam.PolicyStatement({
          sid: 'TaskLogEvents',
          principals: [new iam.AnyPrincipal()],
          actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          resources: [this.logGroup.logGroupArn],
          conditions: thisAccount,
        }),
      ],
    };
    // The registry endpoint serves the same pull as the API one (docker's protocol, authorized by its token).
    policies.EcrDockerEndpoint = policies.EcrApiEndpoint;
    for (const [id, service] of services) {
      const endpoint = this.vpc.addInterfaceEndpoint(id, {
        service,
        subnets: { subnets },
        securityGroups: [endpointSecurityGroup],
        open: false,
        privateDnsEnabled: true,
      });
      for (const statement of policies[id]) endpoint.addToPolicy(statement);
    }
    this.taskSecurityGroup.addEgressRule(endpointSecurityGroup, ec2.Port.tcp(443), 'HTTPS to the interface endpoints');
  }

  /**
   * Route 53 Resolver DNS Firewall: the VPC resolver answers the endpoint names a shard task
   * (and Fargate starting it) looks up, and blocks every other name, so that generated code
   * cannot carry data out in DNS queries to a domain whose name servers someone else runs.
   */
  private addDnsFirewall(): void {
    const region = Aws.REGION;
    const allowed = new route53resolver.CfnFirewallDomainList(this, 'DnsAllowedDomains', {
      name: 'rcb-evaluation-endpoints',
      domains: [
        `api.ecr.${region}.amazonaws.com`,
        `*.dkr.ecr.${region}.amazonaws.com`,
        `logs.${region}.amazonaws.com`,
        `s3.${region}.amazonaws.com`,
        `*.s3.${region}.amazonaws.com`,
        `dynamodb.${region}.amazonaws.com`,
        // Account-based DynamoDB endpoints (<account>.ddb.<region>.amazonaws.com) of newer SDKs.
        `*.ddb.${region}.amazonaws.com`,
      ],
    });
    const everything = new route53resolver.CfnFirewallDomainList(this, 'DnsAllDomains', { name: 'rcb-evaluation-all', domains: ['*'] });
    const rules = new route53resolver.CfnFirewallRuleGroup(this, 'DnsFirewallRules', {
      name: 'rcb-evaluation',
      firewallRules: [
        { action: 'ALLOW', firewallDomainListId: allowed.attrId, priority: 100 },
        { action: 'BLOCK', blockResponse: 'NODATA', firewallDomainListId: everything.attrId, priority: 200 },
      ],
    });
    new route53resolver.CfnFirewallRuleGroupAssociation(this, 'DnsFirewallAssociation', {
      firewallRuleGroupId: rules.attrId,
      vpcId: this.vpc.vpcId,
      priority: 101,
      name: 'rcb-evaluation',
    });
    // The VPC's firewall config keeps its default, fail-open disabled: with the firewall
    // unavailable, queries fail rather than pass unfiltered.
  }
}
