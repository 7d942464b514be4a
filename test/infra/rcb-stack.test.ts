import { Template } from 'aws-cdk-lib/assertions';
import { DEFAULT_LANES } from '../../infra/config';
import { pascal } from '../../infra/generation-construct';
import { RcbStack, stackPropsFromConfig } from '../../infra/rcb-stack';
import { buildStack, logicalIdStartingWith } from './helpers';

/** Asset hashes change with every source edit; they are replaced so the snapshot pins the infrastructure only. */
function scrubAssetHashes(template: Template): unknown {
  return JSON.parse(JSON.stringify(template.toJSON()).replace(/[0-9a-f]{64}/g, '[ASSET-HASH]'));
}

describe('RcbStack', () => {
  it('outputs the bucket, table, state machine ARN, keys secret and every lane queue URL', () => {
    const { template } = buildStack();
    const outputs = template.findOutputs('*');
    expect(outputs.ArtifactsBucketName.Value).toEqual({ Ref: logicalIdStartingWith(template, 'AWS::S3::Bucket', 'StorageArtifacts') });
    expect(outputs.RunsTableName.Value).toEqual({ Ref: logicalIdStartingWith(template, 'AWS::DynamoDB::Table', 'StorageRuns') });
    expect(outputs.RunWorkflowArn.Value).toEqual({
      Ref: logicalIdStartingWith(template, 'AWS::StepFunctions::StateMachine', 'OrchestratorRunWorkflow'),
    });
    expect(outputs.ProviderKeysSecretArn.Value).toEqual({
      Ref: logicalIdStartingWith(template, 'AWS::SecretsManager::Secret', 'GenerationProviderKeys'),
    });
    for (const lane of DEFAULT_LANES) {
      const id = pascal(lane.name);
      expect(outputs[`LaneQueueUrl${id}`].Value).toEqual({ Ref: logicalIdStartingWith(template, 'AWS::SQS::Queue', `Generation${id}Queue`) });
      expect(outputs[`LaneDeadLetterQueueUrl${id}`].Value).toEqual({
        Ref: logicalIdStartingWith(template, 'AWS::SQS::Queue', `Generation${id}DeadLetterQueue`),
      });
    }
  });

  it('is environment-agnostic unless an account or region is configured', () => {
    expect(stackPropsFromConfig({ stackName: 'Rcb' }).env).toBeUndefined();
    expect(stackPropsFromConfig({ stackName: 'Rcb', account: '123456789012', region: 'eu-west-1' }).env).toEqual({
      account: '123456789012',
      region: 'eu-west-1',
    });
    const { stack } = buildStack();
    expect(stack.environment).toBe('aws://unknown-account/unknown-region');
  });

  it('matches the snapshot (asset hashes scrubbed)', () => {
    const { template } = buildStack();
    expect(scrubAssetHashes(template)).toMatchSnapshot();
  });

  it('is an RcbStack built from one construct per concern', () => {
    const { stack } = buildStack();
    expect(stack).toBeInstanceOf(RcbStack);
    expect(stack.node.children.map((c) => c.node.id).filter((id) => /^[A-Z][a-z]+$/.test(id))).toEqual([
      'Storage',
      'Generation',
      'Evaluation',
      'Orchestrator',
      'Monitoring',
    ]);
  });
});
