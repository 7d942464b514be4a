import { Match } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { DEFAULT_LANES } from '../../infra/config';
import { pascal } from '../../infra/generation-construct';
import { CUSTOM_ALARM_METRICS, MonitoringConstruct, type MonitoringConstructProps } from '../../infra/monitoring-construct';
import { constructStack, logicalIdStartingWith, oncePerProps, resourcesOfType } from './helpers';

/**
 * The monitoring construct on a stack of its own, watching stand-ins of what the rcb stack
 * gives it, at the same paths: the default lanes' queues and DLQs, seven functions, a workflow.
 */
const monitoringStack = oncePerProps(
  (props: Pick<MonitoringConstructProps, 'alarmEmail' | 'maxMessageAge'>) =>
    constructStack((stack) => {
      const generation = new Construct(stack, 'Generation');
      const orchestrator = new Construct(stack, 'Orchestrator');
      const lanes = DEFAULT_LANES.map((lane) => ({
        name: lane.name,
        queue: new sqs.Queue(generation, `${pascal(lane.name)}Queue`),
        deadLetterQueue: new sqs.Queue(generation, `${pascal(lane.name)}DeadLetterQueue`),
      }));
      const fn = (scope: Construct, id: string) =>
        new lambda.Function(scope, id, {
          runtime: lambda.Runtime.NODEJS_22_X,
          handler: 'index.handler',
          code: lambda.Code.fromInline('exports.handler = async () => ({})'),
        });
      const functions = [
        { name: 'generate', fn: fn(generation, 'GeneratorFunction') },
        { name: 'dead-letter', fn: fn(generation, 'DeadLetterFunction') },
        { name: 'batch-round', fn: fn(generation, 'BatchRoundFunction') },
        { name: 'plan-run', fn: fn(orchestrator, 'PlanRunFunction') },
        { name: 'check-progress', fn: fn(orchestrator, 'CheckProgressFunction') },
        { name: 'aggregate', fn: fn(orchestrator, 'AggregateFunction') },
        { name: 'mark-failed', fn: fn(orchestrator, 'MarkRunFailedFunction') },
      ];
      const stateMachine = new sfn.StateMachine(orchestrator, 'RunWorkflow', {
        definitionBody: sfn.DefinitionBody.fromChainable(new sfn.Pass(orchestrator, 'Start')),
      });
      const table = new dynamodb.Table(new Construct(stack, 'Storage'), 'Runs', { partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING } });
      const evaluation = new Construct(stack, 'Evaluation');
      const cluster = new ecs.Cluster(evaluation, 'Cluster', { vpc: new ec2.Vpc(evaluation, 'Vpc', { natGateways: 0, maxAzs: 1 }) });
      return new MonitoringConstruct(stack, 'Monitoring', { lanes, functions, stateMachine, table, cluster, ...props });
    }),
  {},
);

type Alarm = { Properties?: Record<string, any> };

/** Alarms on a metric (by name), with the dimension value they watch resolved to a logical id. */
function alarmsOn(alarms: Alarm[], metricName: string): Array<{ watched: string; threshold: number; operator: string; actions: unknown }> {
  const metricOf = (a: Alarm) => a.Properties?.Metrics?.[0]?.MetricStat?.Metric ?? a.Properties;
  return alarms
    .filter((a) => metricOf(a)?.MetricName === metricName)
    .map((a) => {
      const value = metricOf(a)?.Dimensions?.[0]?.Value;
      const watched = value?.Ref ?? value?.['Fn::GetAtt']?.[0] ?? JSON.stringify(value);
      return { watched, threshold: a.Properties?.Threshold, operator: a.Properties?.ComparisonOperator, actions: a.Properties?.AlarmActions };
    });
}

describe('MonitoringConstruct', () => {
  const alarms = (props = {}) => Object.values(resourcesOfType(monitoringStack(props).template, 'AWS::CloudWatch::Alarm')) as Alarm[];

  it('alarms as soon as any lane DLQ holds a message', () => {
    const { template } = monitoringStack();
    const onDlqDepth = alarmsOn(alarms(), 'ApproximateNumberOfMessagesVisible');
    const dlqs = DEFAULT_LANES.map((l) => {
      const id = l.name.charAt(0).toUpperCase() + l.name.slice(1);
      return logicalIdStartingWith(template, 'AWS::SQS::Queue', `Generation${id}DeadLetterQueue`);
    });
    expect(onDlqDepth.map((a) => a.watched).sort()).toEqual(dlqs.sort());
    for (const a of onDlqDepth) expect([a.threshold, a.operator]).toEqual([0, 'GreaterThanThreshold']);
  });

  it('alarms when a lane oldest message is older than six hours', () => {
    const { template } = monitoringStack();
    const onAge = alarmsOn(alarms(), 'ApproximateAgeOfOldestMessage');
    const queues = DEFAULT_LANES.map((l) => {
      const id = l.name.charAt(0).toUpperCase() + l.name.slice(1);
      return logicalIdStartingWith(template, 'AWS::SQS::Queue', `Generation${id}Queue`);
    });
    expect(onAge.map((a) => a.watched).sort()).toEqual(queues.sort());
    for (const a of onAge) expect([a.threshold, a.operator]).toEqual([21600, 'GreaterThanThreshold']);
  });

  it('alarms on any failed or timed-out run workflow execution', () => {
    const { template } = monitoringStack();
    const machine = logicalIdStartingWith(template, 'AWS::StepFunctions::StateMachine', 'OrchestratorRunWorkflow');
    for (const metric of ['ExecutionsFailed', 'ExecutionsTimedOut']) {
      expect(alarmsOn(alarms(), metric)).toEqual([{ watched: machine, threshold: 0, operator: 'GreaterThanThreshold', actions: expect.anything() }]);
    }
  });

  it('alarms on errors and throttles of every pipeline function', () => {
    const { template } = monitoringStack();
    const functions = Object.keys(resourcesOfType(template, 'AWS::Lambda::Function')).filter(
      (id) => id.startsWith('Generation') || id.startsWith('Orchestrator'),
    );
    expect(functions).toHaveLength(7);
    for (const metric of ['Errors', 'Throttles']) {
      const watched = alarmsOn(alarms(), metric);
      expect(watched.map((a) => a.watched).sort()).toEqual([...functions].sort());
      for (const a of watched) expect([a.threshold, a.operator]).toEqual([0, 'GreaterThanThreshold']);
    }
  });

  it('creates one dashboard and a KMS-encrypted topic without a subscription when no e-mail is given', () => {
    const { template } = monitoringStack();
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    const key = logicalIdStartingWith(template, 'AWS::KMS::Key', 'MonitoringAlarmKey');
    template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
    template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: { 'Fn::GetAtt': [key, 'Arn'] } });
    template.resourceCountIs('AWS::SNS::Subscription', 0);
    // CloudWatch and EventBridge publish to the encrypted topic: the key lets them.
    const policy = (Object.values(resourcesOfType(template, 'AWS::KMS::Key'))[0] as Alarm).Properties?.KeyPolicy.Statement as Array<Record<string, any>>;
    const services = policy.flatMap((st) => (st.Principal?.Service ? [st.Principal.Service] : [])).sort();
    expect(services).toEqual(['cloudwatch.amazonaws.com', 'events.amazonaws.com']);
  });

  it('publishes every alarm to an SSL-only topic with an e-mail subscription when an address is given', () => {
    const { template } = monitoringStack({ alarmEmail: 'team@example.org' });
    const topic = logicalIdStartingWith(template, 'AWS::SNS::Topic', 'MonitoringAlarmTopic');
    template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'team@example.org', TopicArn: { Ref: topic } });
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      Topics: [{ Ref: topic }],
      PolicyDocument: {
        Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]),
      },
    });
    const all = Object.values(resourcesOfType(template, 'AWS::CloudWatch::Alarm'));
    expect(all.length).toBeGreaterThan(0);
    for (const a of all) expect(a.Properties?.AlarmActions).toEqual([{ Ref: topic }]);
  });

  /** The alarm on a custom metric of the rcb namespace, by the service that publishes it. */
  function customAlarm(m: { service: string; metricName: string }) {
    const found = alarms().filter((a) => a.Properties?.MetricName === m.metricName);
    expect(found).toHaveLength(1);
    const p = found[0].Properties as Record<string, any>;
    return { namespace: p.Namespace, dimensions: p.Dimensions, statistic: p.Statistic, threshold: p.Threshold, operator: p.ComparisonOperator };
  }

  it.each([
    ['budget spent', CUSTOM_ALARM_METRICS.budgetSpent, 'Maximum', 80],
    ['budget projected', CUSTOM_ALARM_METRICS.budgetProjected, 'Maximum', 100],
    ['failed tasks (from the store)', CUSTOM_ALARM_METRICS.tasksFailed, 'Maximum', 0],
    ['dead-lettered tasks settled in the store', CUSTOM_ALARM_METRICS.tasksDeadLettered, 'Sum', 0],
    ['model calls stopped at the deadline', CUSTOM_ALARM_METRICS.tasksStoppedAtDeadline, 'Sum', 0],
    ['runs past the generation deadline', CUSTOM_ALARM_METRICS.runsPastDeadline, 'Sum', 0],
  ])('alarms on %s from the metric the function publishes', (_name, metric, statistic, threshold) => {
    expect(customAlarm(metric)).toEqual({
      namespace: 'rcb',
      dimensions: [{ Name: 'service', Value: metric.service }],
      statistic,
      threshold,
      operator: 'GreaterThanThreshold',
    });
  });

  it('alarms on read and write throttles of the run table', () => {
    const { template } = monitoringStack();
    const table = logicalIdStartingWith(template, 'AWS::DynamoDB::Table', 'StorageRuns');
    for (const metric of ['ReadThrottleEvents', 'WriteThrottleEvents']) {
      expect(alarmsOn(alarms(), metric)).toEqual([{ watched: table, threshold: 0, operator: 'GreaterThanThreshold', actions: expect.anything() }]);
    }
  });

  it('alarms when the rule matching failed shard tasks of the cluster triggers', () => {
    const { template } = monitoringStack();
    const cluster = logicalIdStartingWith(template, 'AWS::ECS::Cluster', 'EvaluationCluster');
    const ruleId = logicalIdStartingWith(template, 'AWS::Events::Rule', 'MonitoringShardTaskFailureRule');
    const rule = resourcesOfType(template, 'AWS::Events::Rule')[ruleId] as Alarm;
    expect(rule.Properties?.EventPattern).toEqual({
      source: ['aws.ecs'],
      'detail-type': ['ECS Task State Change'],
      detail: {
        clusterArn: [{ 'Fn::GetAtt': [cluster, 'Arn'] }],
        lastStatus: ['STOPPED'],
        $or: [{ stopCode: ['TaskFailedToStart'] }, { containers: { exitCode: [{ 'anything-but': 0 }] } }],
      },
    });
    const topic = logicalIdStartingWith(template, 'AWS::SNS::Topic', 'MonitoringAlarmTopic');
    expect(rule.Properties?.Targets.map((t: { Arn: unknown }) => t.Arn)).toEqual([{ Ref: topic }]);
    expect(alarmsOn(alarms(), 'TriggeredRules')).toEqual([{ watched: ruleId, threshold: 0, operator: 'GreaterThanThreshold', actions: [{ Ref: topic }] }]);
  });
});
