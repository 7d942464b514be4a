/**
 * `rcb cloud doctor`'s checks of the deployed stack (adapters/aws/stack-health.ts) against
 * SDK answers shaped as CloudFormation and SNS return them (aws-sdk-client-mock).
 */
import { CloudFormationClient, DescribeStackResourcesCommand, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { ListSubscriptionsByTopicCommand, SNSClient } from '@aws-sdk/client-sns';
import { mockClient } from 'aws-sdk-client-mock';
import { formatFit } from '../../adapters/aws/quotas-fit';
import { checkStackHealth } from '../../adapters/aws/stack-health';

const cfn = mockClient(CloudFormationClient);
const sns = mockClient(SNSClient);
afterAll(() => [cfn, sns].forEach((m) => m.restore()));
const TOPIC = 'arn:aws:sns:us-east-1:123456789012:Rcb-MonitoringAlarmTopic-X';
const region = { region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } };

function stack(opts: { status?: string; endpoints?: number; subscriptions?: string[]; paged?: boolean }) {
  cfn.reset();
  sns.reset();
  cfn.on(DescribeStacksCommand).resolves({
    Stacks: [
      {
        StackName: 'Rcb',
        StackStatus: (opts.status ?? 'UPDATE_COMPLETE') as never,
        CreationTime: new Date(),
        Outputs: [{ OutputKey: 'AlarmTopicArn', OutputValue: TOPIC }],
      },
    ],
  });
  cfn.on(DescribeStackResourcesCommand).resolves({
    StackResources: [
      ...Array.from({ length: opts.endpoints ?? 3 }, (_, i) => ({
        LogicalResourceId: `Endpoint${i}`,
        ResourceType: 'AWS::EC2::VPCEndpoint',
        ResourceStatus: 'CREATE_COMPLETE' as never,
        Timestamp: new Date(),
      })),
      { LogicalResourceId: 'Table', ResourceType: 'AWS::DynamoDB::Table', ResourceStatus: 'CREATE_COMPLETE' as never, Timestamp: new Date() },
    ],
  });
  const subs = (opts.subscriptions ?? []).map((arn) => ({ SubscriptionArn: arn, TopicArn: TOPIC, Protocol: 'email' }));
  if (opts.paged && subs.length > 1) {
    sns.on(ListSubscriptionsByTopicCommand, { TopicArn: TOPIC, NextToken: undefined }).resolves({ Subscriptions: subs.slice(0, 1), NextToken: 'p2' });
    sns.on(ListSubscriptionsByTopicCommand, { TopicArn: TOPIC, NextToken: 'p2' }).resolves({ Subscriptions: subs.slice(1) });
  } else sns.on(ListSubscriptionsByTopicCommand).resolves({ Subscriptions: subs });
}

const health = () => checkStackHealth(new CloudFormationClient(region), new SNSClient(region), 'Rcb');

describe('the doctor on the deployed stack', () => {
  it('passes a settled stack with its endpoints and a confirmed subscription (read over pages)', async () => {
    stack({ subscriptions: ['PendingConfirmation', `${TOPIC}:1234`], paged: true });
    const checks = await health();
    expect(checks.map((c) => [c.ok, c.what])).toEqual([
      [true, 'stack Rcb settled (UPDATE_COMPLETE)'],
      [true, 'interface endpoints (ECR API, ECR registry, Logs): shard tasks pull the image and write logs through them'],
      [true, 'a confirmed subscription to the alarm topic (1 confirmed, 1 pending)'],
    ]);
  });

  it('warns while the only subscription waits for its confirmation, and says how to confirm it', async () => {
    stack({ subscriptions: ['PendingConfirmation'] });
    const fit = formatFit(await health());
    expect(fit.failed).toBe(false);
    expect(fit.text).toContain('warn  a confirmed subscription to the alarm topic (0 confirmed, 1 pending): needs 1, allowed 0');
  });

  it('fails a parked stack (no endpoints) and one still rolling back', async () => {
    stack({ endpoints: 0, status: 'UPDATE_ROLLBACK_IN_PROGRESS', subscriptions: [`${TOPIC}:1`] });
    const fit = formatFit(await health());
    expect(fit.failed).toBe(true);
    expect(fit.text).toMatch(/FAIL {2}stack Rcb settled \(UPDATE_ROLLBACK_IN_PROGRESS\)/);
    expect(fit.text).toContain('the stack is parked (rcb:interfaceEndpoints=false): deploy with rcb:interfaceEndpoints=true before a run');
  });
});
