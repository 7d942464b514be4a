import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { App } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import { Construct } from 'constructs';
import { EvaluationConstruct, type EvaluationConstructProps } from '../../infra/evaluation-construct';
import { NetworkConstruct } from '../../infra/network-construct';
import { StorageConstruct } from '../../infra/storage-construct';
import {
  actionsOf,
  constructStack,
  flatten,
  logicalIdStartingWith,
  oncePerProps,
  resourcesOfType,
  roleActions,
  roleStatements,
  type Statement,
} from './helpers';

/**
 * The evaluation task on a stack of its own, given a table, a bucket, a VPC and a log group,
 * at the path it has in the rcb stack (under the network, Evaluation/Default/Default).
 */
const evaluationStack = oncePerProps(
  (props: Omit<EvaluationConstructProps, 'table' | 'bucket' | 'vpc' | 'logGroup'>) =>
    constructStack((stack) => {
      const { table, bucket } = new StorageConstruct(stack, 'Storage');
      const network = new NetworkConstruct(new Construct(stack, 'Evaluation'), 'Default', { table, bucket });
      return new EvaluationConstruct(network, 'Default', { table, bucket, vpc: network.vpc, logGroup: network.taskLogGroup, ...props });
    }),
  {},
);

describe('EvaluationConstruct', () => {
  describe('cluster and task definition', () => {
    it('associates the FARGATE_SPOT and FARGATE capacity providers, Spot by default', () => {
      const { template } = evaluationStack();
      template.hasResourceProperties('AWS::ECS::ClusterCapacityProviderAssociations', {
        CapacityProviders: Match.arrayWith(['FARGATE', 'FARGATE_SPOT']),
        DefaultCapacityProviderStrategy: [{ CapacityProvider: 'FARGATE_SPOT', Weight: 1 }],
      });
    });

    it('runs the evaluator as root for the uid sandbox, on a read-only root file system with a scratch volume', () => {
      const { template } = evaluationStack();
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
      const { template } = evaluationStack();
      const [task] = Object.values(resourcesOfType(template, 'AWS::ECS::TaskDefinition'));
      const [container] = task.Properties!.ContainerDefinitions as Array<{ LinuxParameters: { Capabilities: { Drop: string[]; Add?: string[] } } }>;
      const { Drop, Add } = container.LinuxParameters.Capabilities;
      expect(Add).toBeUndefined();
      expect(Drop).not.toContain('ALL');
      // Every capability of a container's default set (Docker's, which Fargate follows) but the kept ones.
      const containerDefaults = [
        'AUDIT_WRITE',
        'CHOWN',
        'DAC_OVERRIDE',
        'FOWNER',
        'FSETID',
        'KILL',
        'MKNOD',
        'NET_BIND_SERVICE',
        'NET_RAW',
        'SETFCAP',
        'SETGID',
        'SETPCAP',
        'SETUID',
        'SYS_CHROOT',
      ];
      const kept = ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'KILL', 'SETGID', 'SETUID'];
      expect(containerDefaults.filter((c) => !Drop.includes(c)).sort()).toEqual(kept);
      // And everything a platform might add beyond them: SYS_ADMIN, SYS_PTRACE, NET_ADMIN, ...
      for (const c of ['SYS_ADMIN', 'SYS_PTRACE', 'NET_ADMIN', 'DAC_READ_SEARCH', 'SYS_MODULE', 'SYS_RESOURCE']) expect(Drop).toContain(c);
      expect(Drop).toHaveLength(37 - kept.length);
    });

    it('takes CPU, memory and architecture from props (2 vCPU / 8 GiB / X86_64 by default)', () => {
      evaluationStack().template.hasResourceProperties('AWS::ECS::TaskDefinition', {
        Cpu: '2048',
        Memory: '8192',
        RuntimePlatform: { CpuArchitecture: 'X86_64', OperatingSystemFamily: 'LINUX' },
      });
      evaluationStack({ cpu: 4096, memoryMiB: 16384, cpuArchitecture: ecs.CpuArchitecture.ARM64 }).template.hasResourceProperties('AWS::ECS::TaskDefinition', {
        Cpu: '4096',
        Memory: '16384',
        RuntimePlatform: { CpuArchitecture: 'ARM64', OperatingSystemFamily: 'LINUX' },
      });
    });

    it('builds the image from container/Dockerfile with a build context free of node_modules, cdk.out, .git, dist and runs', () => {
      const { stack } = evaluationStack();
      const assembly = (stack.node.root as App).synth();
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
      const { template } = evaluationStack();
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
        's3:PutObjectTagging',
      ]);
      const statements = roleStatements(template, role);
      const writes = statements.filter((s) => actionsOf(s).includes('s3:PutObject'));
      expect(writes.map((s) => flatten(s.Resource))).toEqual([expect.stringMatching(/\/runs\/\*\/evaluation\/\*$/)]);
      // The run's cost-allocation tag on what it writes, in the same PutObject: on the same keys, that tag key only.
      const tagging = statements.filter((s) => actionsOf(s).includes('s3:PutObjectTagging'));
      expect(tagging.map((s) => [actionsOf(s), flatten(s.Resource), s.Condition])).toEqual([
        [
          ['s3:PutObjectTagging'],
          flatten(writes[0].Resource),
          { 'ForAllValues:StringEquals': { 's3:RequestObjectTagKeys': ['rcb:run'] }, Null: { 's3:RequestObjectTagKeys': 'false' } },
        ],
      ]);
      // Every table action confined by its leading key, on the table alone (no index: gsi1 lists every run):
      // GetItem, Query and the UpdateItem of its own attributes on RUN#<runId>, BatchGetItem (completions) on TASK#<taskId>,
      // GetItem and PutItem (the environment check kept per image) on IMAGE#<digest>.
      const leading = (s: Statement) =>
        (s.Condition as { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': string[] } })['ForAllValues:StringLike']['dynamodb:LeadingKeys'];
      const byAction: Record<string, unknown[]> = {};
      for (const s of statements.filter((st) => actionsOf(st).some((a) => a.startsWith('dynamodb:')))) {
        for (const a of actionsOf(s)) (byAction[a] ??= []).push([leading(s), flatten(s.Resource)]);
      }
      const table = expect.stringMatching(/^\$\{StorageRuns[0-9A-F]+\.Arn\}$/);
      expect(byAction).toEqual({
        'dynamodb:GetItem': [
          [['RUN#*'], table],
          [['IMAGE#*'], table],
        ],
        'dynamodb:Query': [[['RUN#*'], table]],
        'dynamodb:PutItem': [[['IMAGE#*'], table]],
        // Its tasks' completions (TASK#) and its own tasks' verdicts (RUN#).
        'dynamodb:BatchGetItem': [[['TASK#*', 'RUN#*'], table]],
        'dynamodb:UpdateItem': [[['RUN#*'], table]],
      });
      // The update names the verdict's, the paper environment's and the judged counter's attributes, nothing else.
      const update = statements.find((s) => actionsOf(s).includes('dynamodb:UpdateItem'));
      expect((update!.Condition as Record<string, unknown>)['ForAllValues:StringEquals']).toEqual({
        'dynamodb:Attributes': ['pk', 'sk', 'verdict', 'verdictBlob', 'runEnvironment', 'countJudged', 'expiresAt'],
      });
      const listing = statements.find((s) => actionsOf(s).includes('s3:ListBucket'));
      expect(listing?.Condition).toEqual({ StringLike: { 's3:prefix': ['psets/*'] } });
    });
  });
});
