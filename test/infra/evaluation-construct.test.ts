import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Match } from 'aws-cdk-lib/assertions';
import { buildStack, flatten, logicalIdStartingWith, resourcesOfType, roleActions, roleStatements, actionsOf, type Statement } from './helpers';

const THIS_ACCOUNT = { StringEquals: { 'aws:PrincipalAccount': { Ref: 'AWS::AccountId' } } };

describe('EvaluationConstruct', () => {
  describe('network', () => {
    it('has no NAT gateway, no internet gateway and no egress-only gateway', () => {
      const { template } = buildStack();
      template.resourceCountIs('AWS::EC2::NatGateway', 0);
      template.resourceCountIs('AWS::EC2::InternetGateway', 0);
      template.resourceCountIs('AWS::EC2::VPCGatewayAttachment', 0);
      template.resourceCountIs('AWS::EC2::EgressOnlyInternetGateway', 0);
    });

    it('has only isolated subnets, which never assign public IPs', () => {
      const { template } = buildStack();
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
      const { template } = buildStack();
      const bucket = logicalIdStartingWith(template, 'AWS::S3::Bucket', 'StorageArtifacts');
      const table = logicalIdStartingWith(template, 'AWS::DynamoDB::Table', 'StorageRuns');
      const gateways = Object.values(resourcesOfType(template, 'AWS::EC2::VPCEndpoint')).filter(
        (e) => e.Properties?.VpcEndpointType === 'Gateway',
      );
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
      expect(actionsOf(dynamoStatements[0]).sort()).toEqual(['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem']);
      expect(dynamoStatements[0].Condition).toEqual(THIS_ACCOUNT);
    });

    it('gives every interface endpoint a policy for this account\'s principals: image pulls from its repositories, log events to the task log group', () => {
      const { template } = buildStack();
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
          [['ecr:BatchCheckLayerAvailability', 'ecr:BatchGetImage', 'ecr:GetDownloadUrlForLayer'], 'arn:${AWS::Partition}:ecr:${AWS::Region}:${AWS::AccountId}:repository/*'],
        ]);
      }
      const taskLogs = logicalIdStartingWith(template, 'AWS::Logs::LogGroup', 'EvaluationTaskLogGroup');
      const logStatements = byService.logs.Properties?.PolicyDocument.Statement as Statement[];
      expect(logStatements.map((st) => [actionsOf(st).sort(), flatten(st.Resource)])).toEqual([[['logs:CreateLogStream', 'logs:PutLogEvents'], `\${${taskLogs}.Arn}`]]);
    });

    it('has ECR API, ECR registry and CloudWatch Logs interface endpoints in one AZ, reachable from shard tasks only', () => {
      const { template } = buildStack();
      const interfaces = Object.values(resourcesOfType(template, 'AWS::EC2::VPCEndpoint')).filter(
        (e) => e.Properties?.VpcEndpointType === 'Interface',
      );
      expect(interfaces.map((e) => flatten(e.Properties?.ServiceName).replace('com.amazonaws.${AWS::Region}.', '')).sort()).toEqual([
        'ecr.api',
        'ecr.dkr',
        'logs',
      ]);
      for (const e of interfaces) {
        expect(e.Properties?.PrivateDnsEnabled).toBe(true);
        expect(e.Properties?.SubnetIds).toHaveLength(1);
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
      const { template } = buildStack({ interfaceEndpoints: false });
      const types = Object.values(resourcesOfType(template, 'AWS::EC2::VPCEndpoint')).map((e) => e.Properties?.VpcEndpointType);
      expect(types).toEqual(['Gateway', 'Gateway']);
      template.hasResourceProperties('AWS::Lambda::Function', {
        Description: Match.stringLikeRegexp('validates a run spec'),
        Environment: { Variables: Match.objectLike({ RCB_EVALUATION_READY: 'false' }) },
      });
    });

    it('lets shard tasks out on HTTPS to the endpoints only (the gateway prefix lists and the interface endpoints\' group), never in', () => {
      const { template } = buildStack();
      const taskSgId = logicalIdStartingWith(template, 'AWS::EC2::SecurityGroup', 'EvaluationTaskSecurityGroup');
      const endpointSg = logicalIdStartingWith(template, 'AWS::EC2::SecurityGroup', 'EvaluationEndpointSecurityGroup');
      const taskSg = resourcesOfType(template, 'AWS::EC2::SecurityGroup')[taskSgId];
      expect(taskSg.Properties?.SecurityGroupIngress).toBeUndefined();
      // No inline rule: every rule is a SecurityGroupEgress resource to an endpoint.
      expect(taskSg.Properties?.SecurityGroupEgress).toBeUndefined();
      const egress = Object.values(resourcesOfType(template, 'AWS::EC2::SecurityGroupEgress')).map((e) => e.Properties ?? {});
      expect(egress.every((e) => flatten(e.GroupId) === `\${${taskSgId}.GroupId}` && e.IpProtocol === 'tcp' && e.FromPort === 443 && e.ToPort === 443)).toBe(true);
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
      const { template } = buildStack({ interfaceEndpoints: false });
      const taskSg = resourcesOfType(template, 'AWS::EC2::SecurityGroup')[logicalIdStartingWith(template, 'AWS::EC2::SecurityGroup', 'EvaluationTaskSecurityGroup')];
      expect(taskSg.Properties?.SecurityGroupEgress).toBeUndefined();
      const egress = Object.values(resourcesOfType(template, 'AWS::EC2::SecurityGroupEgress')).map((e) => flatten(e.Properties?.DestinationPrefixListId));
      expect(egress.sort()).toEqual([expect.stringMatching(/^\$\{EvaluationDynamoDbPrefixList/), expect.stringMatching(/^\$\{EvaluationS3PrefixList/)]);
    });

    it('adds no DNS firewall by default; with dnsFirewall, answers only the endpoint names and blocks every other query', () => {
      buildStack().template.resourceCountIs('AWS::Route53Resolver::FirewallRuleGroupAssociation', 0);
      const { template } = buildStack({ dnsFirewall: true });
      const lists = Object.entries(resourcesOfType(template, 'AWS::Route53Resolver::FirewallDomainList'));
      const allowed = lists.find(([id]) => id.startsWith('EvaluationDnsAllowedDomains'))!;
      const all = lists.find(([id]) => id.startsWith('EvaluationDnsAllDomains'))!;
      expect(all[1].Properties?.Domains).toEqual(['*']);
      expect((allowed[1].Properties?.Domains as unknown[]).map(flatten)).toEqual([
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
      const { template } = buildStack();
      template.hasResourceProperties('AWS::EC2::FlowLog', { TrafficType: 'REJECT', LogDestinationType: 'cloud-watch-logs' });
      const [flowLog] = Object.values(resourcesOfType(template, 'AWS::EC2::FlowLog'));
      const group = (flowLog.Properties?.LogGroupName as { Ref: string }).Ref;
      expect(resourcesOfType(template, 'AWS::Logs::LogGroup')[group].Properties?.RetentionInDays).toBe(30);
    });
  });

  describe('cluster and task definition', () => {
    it('associates the FARGATE_SPOT and FARGATE capacity providers, Spot by default', () => {
      const { template } = buildStack();
      template.hasResourceProperties('AWS::ECS::ClusterCapacityProviderAssociations', {
        CapacityProviders: Match.arrayWith(['FARGATE', 'FARGATE_SPOT']),
        DefaultCapacityProviderStrategy: [{ CapacityProvider: 'FARGATE_SPOT', Weight: 1 }],
      });
    });

    it('runs the evaluator as root for the uid sandbox, on a read-only root file system with a scratch volume', () => {
      const { template } = buildStack();
      template.hasResourceProperties('AWS::ECS::TaskDefinition', {
        RequiresCompatibilities: ['FARGATE'],
        NetworkMode: 'awsvpc',
        Volumes: [{ Name: 'scratch' }],
        ContainerDefinitions: [
          Match.objectLike({
            Name: 'evaluator',
            User: '0:0',
            ReadonlyRootFilesystem: true,
            MountPoints: [{ ContainerPath: '/scratch', ReadOnly: false, SourceVolume: 'scratch' }],
            LinuxParameters: { Capabilities: { Drop: Match.anyValue() }, InitProcessEnabled: true },
            StopTimeout: 120,
            LogConfiguration: Match.objectLike({ LogDriver: 'awslogs' }),
            Environment: Match.arrayWith([
              { Name: 'RCB_TABLE', Value: Match.anyValue() },
              { Name: 'RCB_BUCKET', Value: Match.anyValue() },
              { Name: 'RCB_SCRATCH', Value: '/scratch' },
              { Name: 'RCB_PYTHON', Value: '/opt/venv/bin/python3' },
              { Name: 'RCB_SANDBOX', Value: 'uid' },
            ]),
          }),
        ],
      });
    });

    it('drops every capability but the six the uid sandbox needs, and adds none', () => {
      const { template } = buildStack();
      const [task] = Object.values(resourcesOfType(template, 'AWS::ECS::TaskDefinition'));
      const [container] = task.Properties?.ContainerDefinitions as Array<{ LinuxParameters: { Capabilities: { Drop: string[]; Add?: string[] } } }>;
      const { Drop, Add } = container.LinuxParameters.Capabilities;
      expect(Add).toBeUndefined();
      expect(Drop).not.toContain('ALL');
      // Every capability of a container's default set (Docker's, which Fargate follows) but the kept ones.
      const containerDefaults = ['AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE', 'NET_RAW', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT'];
      const kept = ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'KILL', 'SETGID', 'SETUID'];
      expect(containerDefaults.filter((c) => !Drop.includes(c)).sort()).toEqual(kept);
      // And everything a platform might add beyond them: SYS_ADMIN, SYS_PTRACE, NET_ADMIN, ...
      for (const c of ['SYS_ADMIN', 'SYS_PTRACE', 'NET_ADMIN', 'DAC_READ_SEARCH', 'SYS_MODULE', 'SYS_RESOURCE']) expect(Drop).toContain(c);
      expect(Drop).toHaveLength(37 - kept.length);
    });

    it('takes CPU, memory and architecture from props (2 vCPU / 8 GiB / X86_64 by default)', () => {
      buildStack().template.hasResourceProperties('AWS::ECS::TaskDefinition', {
        Cpu: '2048',
        Memory: '8192',
        RuntimePlatform: { CpuArchitecture: 'X86_64', OperatingSystemFamily: 'LINUX' },
      });
      buildStack({ taskCpu: 4096, taskMemoryMiB: 16384, cpuArchitecture: 'ARM64' }).template.hasResourceProperties(
        'AWS::ECS::TaskDefinition',
        { Cpu: '4096', Memory: '16384', RuntimePlatform: { CpuArchitecture: 'ARM64', OperatingSystemFamily: 'LINUX' } },
      );
    });

    it('builds the image from container/Dockerfile with a build context free of node_modules, cdk.out, .git, dist and runs', () => {
      const { app } = buildStack();
      const assembly = app.synth();
      const manifest = JSON.parse(readFileSync(join(assembly.directory, 'RcbTest.assets.json'), 'utf8')) as {
        dockerImages: Record<string, { source: { directory: string; dockerFile?: string; platform?: string } }>;
      };
      const images = Object.values(manifest.dockerImages);
      expect(images).toHaveLength(1);
      expect(images[0].source.dockerFile).toBe('container/Dockerfile');
      expect(images[0].source.platform).toBe('linux/amd64');
      const context = join(assembly.directory, images[0].source.directory);
      expect(existsSync(join(context, 'container', 'Dockerfile'))).toBe(true);
      expect(existsSync(join(context, 'container', 'requirements.txt'))).toBe(true);
      expect(existsSync(join(context, 'package-lock.json'))).toBe(true);
      expect(existsSync(join(context, 'core'))).toBe(true);
      for (const excluded of ['node_modules', 'cdk.out', '.git', 'dist', 'runs', 'infra', 'test']) {
        expect({ excluded, present: existsSync(join(context, excluded)) }).toEqual({ excluded, present: false });
      }
    });
  });

  describe('task role', () => {
    it('can read the run inputs and write verdicts and evaluation logs, nothing else', () => {
      const { template } = buildStack();
      const role = logicalIdStartingWith(template, 'AWS::IAM::Role', 'EvaluationTaskRole');
      expect(roleActions(template, role)).toEqual([
        'dynamodb:BatchGetItem',
        'dynamodb:GetItem',
        'dynamodb:PutItem',
        'dynamodb:Query',
        'dynamodb:UpdateItem',
        's3:GetObject',
        's3:ListBucket',
        's3:PutObject',
      ]);
      const statements = roleStatements(template, role);
      const writes = statements.filter((s) => actionsOf(s).includes('s3:PutObject'));
      expect(writes.map((s) => flatten(s.Resource))).toEqual([expect.stringMatching(/\/runs\/\*\/evaluation\/\*$/)]);
      // Every table action confined by its leading key, on the table alone (no index: gsi1 lists every run):
      // GetItem, Query, PutItem and the counter's UpdateItem on RUN#<runId>, BatchGetItem (completions) on TASK#<taskId>,
      // GetItem and PutItem (the environment check kept per image) on IMAGE#<digest>.
      const leading = (s: Statement) => (s.Condition as { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': string[] } })['ForAllValues:StringLike']['dynamodb:LeadingKeys'];
      const byAction: Record<string, unknown[]> = {};
      for (const s of statements.filter((st) => actionsOf(st).some((a) => a.startsWith('dynamodb:')))) {
        for (const a of actionsOf(s)) (byAction[a] ??= []).push([leading(s), flatten(s.Resource)]);
      }
      const table = expect.stringMatching(/^\$\{StorageRuns[0-9A-F]+\.Arn\}$/);
      expect(byAction).toEqual({
        'dynamodb:GetItem': [[['RUN#*'], table], [['IMAGE#*'], table]],
        'dynamodb:Query': [[['RUN#*'], table]],
        'dynamodb:PutItem': [[['RUN#*'], table], [['IMAGE#*'], table]],
        'dynamodb:BatchGetItem': [[['TASK#*'], table]],
        'dynamodb:UpdateItem': [[['RUN#*'], table]],
      });
      // The update is the run's verdict counter and nothing else.
      const update = statements.find((s) => actionsOf(s).includes('dynamodb:UpdateItem'));
      expect((update?.Condition as Record<string, unknown>)['ForAllValues:StringEquals']).toEqual({ 'dynamodb:Attributes': ['pk', 'sk', 'countJudged'] });
      const listing = statements.find((s) => actionsOf(s).includes('s3:ListBucket'));
      expect(listing?.Condition).toEqual({ StringLike: { 's3:prefix': ['psets/*'] } });
    });

    it('cannot touch the provider keys secret', () => {
      const { template } = buildStack();
      const role = logicalIdStartingWith(template, 'AWS::IAM::Role', 'EvaluationTaskRole');
      expect(roleActions(template, role).some((a) => a.startsWith('secretsmanager:'))).toBe(false);
    });
  });
});
