/** `rcb:image`: a prebuilt evaluation image pinned by digest instead of the build in cdk deploy. */
import { App } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { CONTEXT_KEYS, configFromContext } from '../../infra/config';
import { EvaluationConstruct } from '../../infra/evaluation-construct';
import { StorageConstruct } from '../../infra/storage-construct';
import { constructStack, resourcesOfType } from './helpers';

const DIGEST = `sha256:${'ab'.repeat(32)}`;

describe('prebuilt evaluation image', () => {
  it('pins the task definition to the digest and builds no image asset', () => {
    const { template, stack } = constructStack((s) => {
      const { table, bucket } = new StorageConstruct(s, 'Storage');
      const scope = new Construct(s, 'Evaluation');
      const vpc = new ec2.Vpc(scope, 'Vpc', { natGateways: 0, maxAzs: 1 });
      return new EvaluationConstruct(scope, 'Default', {
        table,
        bucket,
        vpc,
        logGroup: new logs.LogGroup(scope, 'Logs'),
        image: `123456789012.dkr.ecr.us-east-1.amazonaws.com/rcb-images@${DIGEST}`,
      });
    });
    const task = Object.values(resourcesOfType(template, 'AWS::ECS::TaskDefinition'))[0];
    expect(JSON.stringify(task.Properties?.ContainerDefinitions[0].Image)).toContain(`/rcb-images@${DIGEST}`);
    expect(stack.node.metadata.filter((m) => m.type === 'aws:cdk:asset')).toEqual([]);
    // The stack's own repository receives pushes, with lifecycle rules, and goes with the stack.
    const repo = Object.values(resourcesOfType(template, 'AWS::ECR::Repository'))[0];
    expect(repo.Properties?.EmptyOnDelete).toBe(true);
    expect(
      JSON.parse(repo.Properties?.LifecyclePolicy.LifecyclePolicyText).rules.map((r: { selection: { tagStatus: string } }) => r.selection.tagStatus),
    ).toEqual(['untagged', 'any']);
  });

  it('rejects a reference without a digest, naming the key', () => {
    const read = (image: string) => configFromContext(new App({ context: { [CONTEXT_KEYS.image]: image } }).node);
    expect(read(`rcb-images@${DIGEST}`).image).toBe(`rcb-images@${DIGEST}`);
    expect(() => read('rcb-images:latest')).toThrow(/rcb:image: must be <repository>@sha256:<64 hex digits>/);
  });
});
