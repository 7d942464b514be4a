import { Aws, CfnResource, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as cr from 'aws-cdk-lib/custom-resources';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as route53resolver from 'aws-cdk-lib/aws-route53resolver';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';

/** The id of CDK's stack-wide provider behind a VPC's restrictDefaultSecurityGroup. */
const RESTRICT_DEFAULT_SG_PROVIDER = 'Custom::VpcRestrictDefaultSGCustomResourceProvider';

export interface NetworkConstructProps {
  /** The artifacts bucket: the S3 gateway endpoint carries requests to it (and ECR's layers) only. */
  readonly bucket: s3.IBucket;
  /** The run table: the DynamoDB gateway endpoint carries requests to it only. */
  readonly table: dynamodb.ITable;
  /**
   * Create the ECR and CloudWatch Logs interface endpoints that let a task start without
   * internet. They are the only fixed cost of the stack; `false` parks it (runs cannot
   * start tasks until the endpoints are deployed again).
   * @default true
   */
  readonly interfaceEndpoints?: boolean;
  /**
   * Number of availability zones holding an interface endpoint network interface. Two
   * survive a zone outage (tasks start in either zone); one halves the endpoints' hourly
   * price (tasks in the other zone reach it across zones). The monthly cost of either is
   * computed from the template (core/cost/infra-cost.ts idleMonthlyCost).
   * @default 2
   */
  readonly endpointAzCount?: number;
  /**
   * A Route 53 Resolver DNS Firewall on the VPC that answers only the AWS endpoint names a
   * shard task needs and blocks every other query (NODATA), closing DNS as a way out
   * through the VPC resolver (which security groups do not filter).
   * @default false
   */
  readonly dnsFirewall?: boolean;
  /**
   * Retention of the VPC flow log group and of the shard tasks' log group.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
}

/**
 * The network shard tasks run in: an isolated VPC (no NAT, no internet gateway, no public
 * IP), gateway endpoints to this stack's bucket and table, the interface endpoints a
 * Fargate task needs to start (ECR, CloudWatch Logs), the task security group (HTTPS to
 * those endpoints only), an optional DNS firewall, and the one log group a task may write
 * to through the logs endpoint.
 */
export class NetworkConstruct extends Construct {
  public readonly vpc: ec2.Vpc;
  /** Attached to every shard task: HTTPS to the endpoints only, nothing in. */
  public readonly taskSecurityGroup: ec2.SecurityGroup;
  public readonly taskSubnets: ec2.SubnetSelection;
  /** The shard tasks' log group: the logs endpoint's policy admits log events to it and to nothing else. */
  public readonly taskLogGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: NetworkConstructProps) {
    super(scope, id);
    const retention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;

    this.vpc = new ec2.Vpc(this, 'Vpc', {
      ipAddresses: ec2.IpAddresses.cidr('10.64.0.0/16'),
      maxAzs: 2,
      natGateways: 0,
      subnetConfiguration: [{ name: 'evaluation', subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask: 20 }],
      restrictDefaultSecurityGroup: true,
    });
    this.taskSubnets = { subnetType: ec2.SubnetType.PRIVATE_ISOLATED };
    this.logRestrictDefaultSgProvider(retention);

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

    this.taskLogGroup = new logs.LogGroup(this, 'TaskLogGroup', { retention, removalPolicy: RemovalPolicy.DESTROY });
    this.addGatewayEndpoints(props);
    if (props.interfaceEndpoints ?? true) this.addInterfaceEndpoints(props.endpointAzCount ?? 2);
    if (props.dnsFirewall) this.addDnsFirewall();
  }

  /**
   * CDK's function that empties the VPC's default security group (restrictDefaultSecurityGroup,
   * a stack-wide provider) logs, by default, to `/aws/lambda/<name>`, a group Lambda creates on
   * its first call without a retention and that `cdk destroy` leaves behind (the function runs
   * again when the stack is deleted). Here it logs to a group of the stack, deleted with it
   * after the function (the function references it), so the delete's own log lines go too.
   */
  private logRestrictDefaultSgProvider(retention: logs.RetentionDays): void {
    const provider = Stack.of(this).node.tryFindChild(RESTRICT_DEFAULT_SG_PROVIDER);
    const handler = provider?.node.tryFindChild('Handler');
    if (!(handler instanceof CfnResource) || handler.cfnResourceType !== 'AWS::Lambda::Function') {
      throw new Error(`rcb network: no ${RESTRICT_DEFAULT_SG_PROVIDER}/Handler function to give a log group (did aws-cdk-lib rename it?)`);
    }
    const group = new logs.LogGroup(this, 'RestrictDefaultSgLogGroup', { retention, removalPolicy: RemovalPolicy.DESTROY });
    // The Ref makes CloudFormation create the group first and delete it last.
    handler.addPropertyOverride('LoggingConfig', { LogGroup: group.logGroupName });
  }

  /**
   * Free gateway endpoints whose policies admit only this account's principals on this
   * stack's bucket and table (and ECR's layer bucket), and the task security group's HTTPS
   * egress to their prefix lists.
   */
  private addGatewayEndpoints(props: NetworkConstructProps): void {
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
        // s3:PutObjectTagging: a run's objects are tagged in their PutObject (core/cloud/object-tags.ts).
        actions: ['s3:GetObject', 's3:PutObject', 's3:PutObjectTagging', 's3:ListBucket'],
        resources: [props.bucket.bucketArn, props.bucket.arnForObjects('*')],
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
        resources: [props.table.tableArn],
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
        [
          {
            id: 'AwsSolutions-IAM5',
            reason: 'ec2:DescribePrefixLists supports no resource-level permission; the lookup reads the AWS-managed prefix list id of one service.',
            appliesTo: ['Resource::*'],
          },
        ],
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
            reason:
              'CloudFormation calls the lookup synchronously during a deploy; a failed call fails the deployment, so there is no asynchronous event to dead-letter.',
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
          resources: [this.taskLogGroup.logGroupArn],
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
