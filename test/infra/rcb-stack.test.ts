import { Match, Template } from 'aws-cdk-lib/assertions';
import { DEFAULT_LANES } from '../../infra/config';
import { pascal } from '../../infra/generation-construct';
import { RcbStack, stackPropsFromConfig } from '../../infra/rcb-stack';
import { flatten, logicalIdStartingWith, resourcesOfType, roleActions, sharedStack, unsynthesizedStack } from './helpers';

/** Asset hashes change with every source edit; they are replaced so the snapshot pins the infrastructure only. */
function scrubAssetHashes(template: Template): unknown {
  // A function's CurrentVersion logical id ends in a hash of its configuration, code asset included.
  const json = JSON.stringify(template.toJSON())
    .replace(/[0-9a-f]{64}/g, '[ASSET-HASH]')
    .replace(/(CurrentVersion[0-9A-F]{8})[0-9a-f]{32}/g, '$1[VERSION-HASH]');
  return JSON.parse(json);
}

type Alarm = { Properties?: Record<string, any> };

/** The logical ids whose metric (by name) an alarm of the template watches. */
function watchedBy(template: Template, metricName: string): string[] {
  const metricOf = (a: Alarm) => a.Properties?.Metrics?.[0]?.MetricStat?.Metric ?? a.Properties;
  return (Object.values(resourcesOfType(template, 'AWS::CloudWatch::Alarm')) as Alarm[])
    .filter((a) => metricOf(a)?.MetricName === metricName)
    .map((a) => {
      const value = metricOf(a)?.Dimensions?.[0]?.Value;
      return value?.Ref ?? value?.['Fn::GetAtt']?.[0] ?? JSON.stringify(value);
    })
    .sort();
}

describe('RcbStack', () => {
  it('outputs the bucket, table, state machine ARN, keys secret and every lane queue URL', () => {
    const { template } = sharedStack();
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
    const stack = unsynthesizedStack();
    expect(stack.environment).toBe('aws://unknown-account/unknown-region');
  });

  it('matches the snapshot (asset hashes scrubbed)', () => {
    const { template } = sharedStack();
    expect(scrubAssetHashes(template)).toMatchSnapshot();
  });

  it('is an RcbStack built from one construct per concern', () => {
    const stack = unsynthesizedStack();
    expect(stack).toBeInstanceOf(RcbStack);
    expect(stack.node.children.map((c) => c.node.id).filter((id) => /^[A-Z][a-z]+$/.test(id))).toEqual([
      'Storage',
      'Generation',
      'Evaluation',
      'Orchestrator',
      'Monitoring',
      'Schedules',
    ]);
  });

  describe('wiring', () => {
    it('tells PlanRun the evaluation network cannot start tasks when the stack is parked', () => {
      const parked = Template.fromStack(unsynthesizedStack({ interfaceEndpoints: false }));
      parked.hasResourceProperties('AWS::Lambda::Function', {
        Description: Match.stringLikeRegexp('validates a run spec'),
        Environment: { Variables: Match.objectLike({ RCB_EVALUATION_READY: 'false' }) },
      });
      sharedStack().template.hasResourceProperties('AWS::Lambda::Function', {
        Description: Match.stringLikeRegexp('validates a run spec'),
        Environment: { Variables: Match.objectLike({ RCB_EVALUATION_READY: 'true' }) },
      });
    });

    it("runs the stack's shard task definition on its cluster, in the network's isolated subnets with the task security group", () => {
      const { template } = sharedStack();
      const [machine] = Object.values(resourcesOfType(template, 'AWS::StepFunctions::StateMachine'));
      const text = flatten(machine.Properties?.DefinitionString);
      const subnets = Object.keys(resourcesOfType(template, 'AWS::EC2::Subnet')).sort();
      const sg = logicalIdStartingWith(template, 'AWS::EC2::SecurityGroup', 'EvaluationTaskSecurityGroup');
      expect(text).toContain(`"AwsvpcConfiguration":{"Subnets":["\${${subnets[0]}}","\${${subnets[1]}}"],"SecurityGroups":["\${${sg}.GroupId}"]}`);
      expect(text).toContain(`"Cluster":"\${${logicalIdStartingWith(template, 'AWS::ECS::Cluster', 'EvaluationCluster')}.Arn}"`);
      const task = resourcesOfType(template, 'AWS::ECS::TaskDefinition')[logicalIdStartingWith(template, 'AWS::ECS::TaskDefinition', 'EvaluationShardTask')];
      // The revision PlanRun pinned for the run (issue 22): every shard's RunTask uses it, and
      // PlanRun is told the stack's task definition to pin.
      expect(text).toContain('"TaskDefinition.$":"$.taskDefinitionArn"');
      expect(task).toBeDefined();
      const taskId = logicalIdStartingWith(template, 'AWS::ECS::TaskDefinition', 'EvaluationShardTask');
      const planRun = Object.values(resourcesOfType(template, 'AWS::Lambda::Function')).find(
        (f) => (f.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables?.RCB_TASK_DEFINITION !== undefined,
      );
      expect(JSON.stringify(planRun?.Properties?.Environment)).toContain(taskId);
    });

    it('gives CheckProgress and the batch round the same generation deadline', () => {
      const { template } = sharedStack();
      const env = (description: string) =>
        (Object.values(template.findResources('AWS::Lambda::Function', { Properties: { Description: Match.stringLikeRegexp(description) } }))[0] as Alarm)
          .Properties?.Environment.Variables;
      expect(env('reports whether every task').RCB_GENERATION_TIMEOUT_SEC).toBe('86400');
      expect(env('one round of the batch lane').RCB_GENERATION_TIMEOUT_SEC).toBe('86400');
    });

    it("alarms on every lane's queue and DLQ, on the run workflow and on every function of the stack", () => {
      const { template } = sharedStack();
      const lane = (suffix: string) =>
        DEFAULT_LANES.map((l) => logicalIdStartingWith(template, 'AWS::SQS::Queue', `Generation${pascal(l.name)}${suffix}`)).sort();
      expect(watchedBy(template, 'ApproximateNumberOfMessagesVisible')).toEqual(lane('DeadLetterQueue'));
      expect(watchedBy(template, 'ApproximateAgeOfOldestMessage')).toEqual(lane('Queue'));
      const machine = logicalIdStartingWith(template, 'AWS::StepFunctions::StateMachine', 'OrchestratorRunWorkflow');
      expect(watchedBy(template, 'ExecutionsFailed')).toEqual([machine]);
      const functions = Object.keys(resourcesOfType(template, 'AWS::Lambda::Function')).filter(
        (id) => id.startsWith('Generation') || id.startsWith('Orchestrator'),
      );
      expect(functions).toHaveLength(7);
      expect(watchedBy(template, 'Errors')).toEqual([...functions].sort());
    });

    it('lets the generator and batch round roles (the model callers) read the provider keys, and no other role of the stack', () => {
      const { template } = sharedStack();
      const generatorRole = logicalIdStartingWith(template, 'AWS::IAM::Role', 'GenerationGeneratorRole');
      const batchRoundRole = logicalIdStartingWith(template, 'AWS::IAM::Role', 'GenerationBatchRoundRole');
      const readers = Object.keys(resourcesOfType(template, 'AWS::IAM::Role')).filter((role) =>
        roleActions(template, role).includes('secretsmanager:GetSecretValue'),
      );
      expect(readers.sort()).toEqual([generatorRole, batchRoundRole].sort());
      // The shard task, which runs model-written code, least of all.
      const taskRole = logicalIdStartingWith(template, 'AWS::IAM::Role', 'EvaluationTaskRole');
      expect(roleActions(template, taskRole).some((a) => a.startsWith('secretsmanager:'))).toBe(false);
    });

    it('grants no role of the stack a wildcard action', () => {
      const { template } = sharedStack();
      for (const role of Object.keys(resourcesOfType(template, 'AWS::IAM::Role'))) {
        const wild = roleActions(template, role).filter((a) => a === '*' || a.endsWith(':*'));
        expect({ role, wild }).toEqual({ role, wild: [] });
      }
    });
  });
});
