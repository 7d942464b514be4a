import { Construct } from 'constructs';
import { NetworkConstruct, type NetworkConstructProps } from '../../infra/network-construct';
import { StorageConstruct } from '../../infra/storage-construct';
import { DEFAULT_STACK_SIZES, idleMonthlyCost } from '../../core/cost/infra-cost';
import { interfaceEndpointAzsOf } from '../../core/cost/infra-sizes';
import { actionsOf, constructStack, flatten, logicalIdStartingWith, oncePerProps, resourcesOfType, type Statement } from './helpers';

const THIS_ACCOUNT = { StringEquals: { 'aws:PrincipalAccount': { Ref: 'AWS::AccountId' } } };

/** The network alone on a stack of its own, at the path it has in the rcb stack (Evaluation/Default). */
const networkStack = oncePerProps(
  (props: Omit<NetworkConstructProps, 'table' | 'bucket'>) =>
    constructStack((stack) => {
      const { table, bucket } = new StorageConstruct(stack, 'Storage');
      return new NetworkConstruct(new Construct(stack, 'Evaluation'), 'Default', { table, bucket, ...props });
    }),
  {},
);

describe('NetworkConstruct', () => {
  it('keeps the interface endpoints in one AZ when endpointAzCount is 1, at half the idle price', () => {
    const { template } = networkStack({ endpointAzCount: 1 });
    const interfaces = Object.values(resourcesOfType(template, 'AWS::EC2::VPCEndpoint')).filter((e) => e.Properties?.VpcEndpointType === 'Interface');
    expect(interfaces.map((e) => e.Properties?.SubnetIds.length)).toEqual([1, 1, 1]);
    const endpointsLine = (t: typeof template) =>
      idleMonthlyCost({ ...DEFAULT_STACK_SIZES, interfaceEndpointAzs: interfaceEndpointAzsOf(t.toJSON()) }).lines.find(
        (l) => l.item === 'interface endpoints',
      )!;
    const one = endpointsLine(template);
    const two = endpointsLine(networkStack().template);
    expect([one.usd, two.usd]).toEqual([3 * 0.01 * 730, 2 * 3 * 0.01 * 730].map((x) => expect.closeTo(x, 6)));
  });

  it('has no NAT gateway, no internet gateway and no egress-only gateway', () => {
    const { template } = networkStack();
    template.resourceCountIs('AWS::EC2::NatGateway', 0);
    template.resourceCountIs('AWS::EC2::InternetGateway', 0);
    template.resourceCountIs('AWS::EC2::VPCGatewayAttachment', 0);
    template.resourceCountIs('AWS::EC2::EgressOnlyInternetGateway', 0);
  });

  it('has only isolated subnets, which never assign public IPs', () => {
    const { template } = networkStack();
    const subnets = Object.values(resourcesOfType(template, 'AWS::EC2::Subnet'));
    expect(subnets).toHaveLength(2);
    for (const s of subnets) {
      expect(s.Properties?.MapPublicIpOnLaunch).toBe(false);
      expect(s.Properties?.Tags).toEqual(expect.arrayContaining([{ Key: 'aws-cdk:subnet-type', Value: 'Isolated' }]));
    }
    // No route to anywhere but the VPC and the gateway endpoints.
    template.resourceCountIs('AWS::EC2::Route', 0);
  });

  it('has S3 and DynamoDB gateway endpoints whose policies admit only the stack bucket and table', () => {
    const { template } = networkStack();
    const bucket = logicalIdStartingWith(template, 'AWS::S3::Bucket', 'StorageArtifacts');
    const table = logicalIdStartingWith(template, 'AWS::DynamoDB::Table', 'StorageRuns');
    const gateways = Object.values(resourcesOfType(template, 'AWS::EC2::VPCEndpoint')).filter((e) => e.Properties?.VpcEndpointType === 'Gateway');
    const byService = Object.fromEntries(gateways.map((e) => [flatten(e.Properties?.ServiceName).split('.').pop(), e]));
    expect(Object.keys(byService).sort()).toEqual(['dynamodb', 's3']);

    const s3Statements = byService.s3.Properties?.PolicyDocument.Statement as Statement[];
    expect(s3Statements.map((s) => flatten(s.Resource))).toEqual([
      'arn:${AWS::Partition}:s3:::prod-${AWS::Region}-starport-layer-bucket/*',
      `\${${bucket}.Arn},\${${bucket}.Arn}/*`,
    ]);
    // ECR's layer bucket: read-only, and without the account condition (ECR signs those downloads, not this account).
    expect(s3Statements[0]).toMatchObject({ Action: 's3:GetObject', Principal: { AWS: '*' } });
    expect(s3Statements[0].Condition).toBeUndefined();
    expect(s3Statements[1].Condition).toEqual(THIS_ACCOUNT);
    const dynamoStatements = byService.dynamodb.Properties?.PolicyDocument.Statement as Statement[];
    // The table alone (no index), with the task role's actions and no more, for this account's principals.
    expect(dynamoStatements.map((s) => flatten(s.Resource))).toEqual([`\${${table}.Arn}`]);
    expect(actionsOf(dynamoStatements[0]).sort()).toEqual([
      'dynamodb:BatchGetItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
    ]);
    expect(dynamoStatements[0].Condition).toEqual(THIS_ACCOUNT);
  });

  it("gives every interface endpoint a policy for this account's principals: image pulls from its repositories, log events to the task log group", () => {
    const { template } = networkStack();
    const interfaces = Object.values(resourcesOfType(template, 'AWS::EC2::VPCEndpoint')).filter((e) => e.Properties?.VpcEndpointType === 'Interface');
    const byService = Object.fromEntries(interfaces.map((e) => [flatten(e.Properties?.ServiceName).replace('com.amazonaws.${AWS::Region}.', ''), e]));
    for (const e of interfaces) {
      const statements = e.Properties?.PolicyDocument?.Statement as Statement[];
      expect(statements.length).toBeGreaterThan(0);
      for (const st of statements) {
        expect(st.Effect).toBe('Allow');
        expect(st.Condition).toEqual(THIS_ACCOUNT);
        expect(actionsOf(st).some((a) => a.endsWith('*'))).toBe(false);
      }
    }
    for (const service of ['ecr.api', 'ecr.dkr']) {
      const statements = byService[service].Properties?.PolicyDocument.Statement as Statement[];
      expect(statements.map((st) => [actionsOf(st).sort(), flatten(st.Resource)])).toEqual([
        [['ecr:GetAuthorizationToken'], '*'],
        [
          ['ecr:BatchCheckLayerAvailability', 'ecr:BatchGetImage', 'ecr:GetDownloadUrlForLayer'],
          'arn:${AWS::Partition}:ecr:${AWS::Region}:${AWS::AccountId}:repository/*',
        ],
      ]);
    }
    const taskLogs = logicalIdStartingWith(template, 'AWS::Logs::LogGroup', 'EvaluationTaskLogGroup');
    const logStatements = byService.logs.Properties?.PolicyDocument.Statement as Statement[];
    expect(logStatements.map((st) => [actionsOf(st).sort(), flatten(st.Resource)])).toEqual([
      [['logs:CreateLogStream', 'logs:PutLogEvents'], `\${${taskLogs}.Arn}`],
    ]);
  });

  it('has ECR API, ECR registry and CloudWatch Logs interface endpoints in two AZs, reachable from shard tasks only', () => {
    const { template } = networkStack();
    const interfaces = Object.values(resourcesOfType(template, 'AWS::EC2::VPCEndpoint')).filter((e) => e.Properties?.VpcEndpointType === 'Interface');
    expect(interfaces.map((e) => flatten(e.Properties?.ServiceName).replace('com.amazonaws.${AWS::Region}.', '')).sort()).toEqual([
      'ecr.api',
      'ecr.dkr',
      'logs',
    ]);
    for (const e of interfaces) {
      expect(e.Properties?.PrivateDnsEnabled).toBe(true);
      expect(e.Properties?.SubnetIds).toHaveLength(2);
    }
    const taskSg = logicalIdStartingWith(template, 'AWS::EC2::SecurityGroup', 'EvaluationTaskSecurityGroup');
    const endpointSg = logicalIdStartingWith(template, 'AWS::EC2::SecurityGroup', 'EvaluationEndpointSecurityGroup');
    template.hasResourceProperties('AWS::EC2::SecurityGroupIngress', {
      GroupId: { 'Fn::GetAtt': [endpointSg, 'GroupId'] },
      SourceSecurityGroupId: { 'Fn::GetAtt': [taskSg, 'GroupId'] },
      IpProtocol: 'tcp',
      FromPort: 443,
      ToPort: 443,
    });
    expect(resourcesOfType(template, 'AWS::EC2::SecurityGroup')[endpointSg].Properties?.SecurityGroupIngress).toBeUndefined();
  });

  it('drops the interface endpoints when parked', () => {
    const { template } = networkStack({ interfaceEndpoints: false });
    const types = Object.values(resourcesOfType(template, 'AWS::EC2::VPCEndpoint')).map((e) => e.Properties?.VpcEndpointType);
    expect(types).toEqual(['Gateway', 'Gateway']);
  });

  it("lets shard tasks out on HTTPS to the endpoints only (the gateway prefix lists and the interface endpoints' group), never in", () => {
    const { template } = networkStack();
    const taskSgId = logicalIdStartingWith(template, 'AWS::EC2::SecurityGroup', 'EvaluationTaskSecurityGroup');
    const endpointSg = logicalIdStartingWith(template, 'AWS::EC2::SecurityGroup', 'EvaluationEndpointSecurityGroup');
    const taskSg = resourcesOfType(template, 'AWS::EC2::SecurityGroup')[taskSgId];
    expect(taskSg.Properties?.SecurityGroupIngress).toBeUndefined();
    // No inline rule: every rule is a SecurityGroupEgress resource to an endpoint.
    expect(taskSg.Properties?.SecurityGroupEgress).toBeUndefined();
    const egress = Object.values(resourcesOfType(template, 'AWS::EC2::SecurityGroupEgress')).map((e) => e.Properties ?? {});
    expect(egress.every((e) => flatten(e.GroupId) === `\${${taskSgId}.GroupId}` && e.IpProtocol === 'tcp' && e.FromPort === 443 && e.ToPort === 443)).toBe(
      true,
    );
    expect(egress.some((e) => 'CidrIp' in e || 'CidrIpv6' in e)).toBe(false);
    const lookups = Object.keys(resourcesOfType(template, 'Custom::GatewayPrefixList')).sort();
    expect(lookups).toEqual([expect.stringMatching(/^EvaluationDynamoDbPrefixList/), expect.stringMatching(/^EvaluationS3PrefixList/)]);
    expect(egress.map((e) => flatten(e.DestinationPrefixListId ?? e.DestinationSecurityGroupId)).sort()).toEqual(
      [`\${${endpointSg}.GroupId}`, ...lookups.map((id) => `\${${id}.PrefixLists.0.PrefixListId}`)].sort(),
    );
    // The lookups ask EC2 for the region's prefix lists by name, at deploy time.
    const [lookup] = Object.values(resourcesOfType(template, 'Custom::GatewayPrefixList'));
    expect(flatten(lookup.Properties?.Create)).toContain('describePrefixLists');
  });

  it('when parked, lets shard tasks out to the gateway prefix lists only', () => {
    const { template } = networkStack({ interfaceEndpoints: false });
    const taskSg = resourcesOfType(template, 'AWS::EC2::SecurityGroup')[
      logicalIdStartingWith(template, 'AWS::EC2::SecurityGroup', 'EvaluationTaskSecurityGroup')
    ];
    expect(taskSg.Properties?.SecurityGroupEgress).toBeUndefined();
    const egress = Object.values(resourcesOfType(template, 'AWS::EC2::SecurityGroupEgress')).map((e) => flatten(e.Properties?.DestinationPrefixListId));
    expect(egress.sort()).toEqual([expect.stringMatching(/^\$\{EvaluationDynamoDbPrefixList/), expect.stringMatching(/^\$\{EvaluationS3PrefixList/)]);
  });

  it('adds no DNS firewall by default; with dnsFirewall, answers only the endpoint names and blocks every other query', () => {
    networkStack().template.resourceCountIs('AWS::Route53Resolver::FirewallRuleGroupAssociation', 0);
    const { template } = networkStack({ dnsFirewall: true });
    const lists = Object.entries(resourcesOfType(template, 'AWS::Route53Resolver::FirewallDomainList'));
    const allowed = lists.find(([id]) => id.startsWith('EvaluationDnsAllowedDomains'))!;
    const all = lists.find(([id]) => id.startsWith('EvaluationDnsAllDomains'))!;
    expect(all[1].Properties?.Domains).toEqual(['*']);
    expect((allowed[1].Properties!.Domains as unknown[]).map(flatten)).toEqual([
      'api.ecr.${AWS::Region}.amazonaws.com',
      '*.dkr.ecr.${AWS::Region}.amazonaws.com',
      'logs.${AWS::Region}.amazonaws.com',
      's3.${AWS::Region}.amazonaws.com',
      '*.s3.${AWS::Region}.amazonaws.com',
      'dynamodb.${AWS::Region}.amazonaws.com',
      '*.ddb.${AWS::Region}.amazonaws.com',
    ]);
    template.hasResourceProperties('AWS::Route53Resolver::FirewallRuleGroup', {
      FirewallRules: [
        { Action: 'ALLOW', FirewallDomainListId: { 'Fn::GetAtt': [allowed[0], 'Id'] }, Priority: 100 },
        { Action: 'BLOCK', BlockResponse: 'NODATA', FirewallDomainListId: { 'Fn::GetAtt': [all[0], 'Id'] }, Priority: 200 },
      ],
    });
    template.hasResourceProperties('AWS::Route53Resolver::FirewallRuleGroupAssociation', {
      VpcId: { Ref: logicalIdStartingWith(template, 'AWS::EC2::VPC', 'EvaluationVpc') },
    });
  });

  it('logs rejected flows to a log group with a retention', () => {
    const { template } = networkStack();
    template.hasResourceProperties('AWS::EC2::FlowLog', { TrafficType: 'REJECT', LogDestinationType: 'cloud-watch-logs' });
    const [flowLog] = Object.values(resourcesOfType(template, 'AWS::EC2::FlowLog'));
    const group = (flowLog.Properties!.LogGroupName as { Ref: string }).Ref;
    expect(resourcesOfType(template, 'AWS::Logs::LogGroup')[group].Properties?.RetentionInDays).toBe(30);
  });
});
