/**
 * What `rcb cloud doctor` checks of the deployed stack itself, after a deploy: the stack is in
 * a settled state, its interface endpoints exist (without them shard tasks cannot pull the
 * image), and the alarm topic has a confirmed subscription (until the e-mail's link is
 * followed, SNS delivers no alarm). As FitCheck lines, printed with the quota checks
 * (docs/cloud.md "First deploy").
 */
import { DescribeStackResourcesCommand, DescribeStacksCommand, type CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { ListSubscriptionsByTopicCommand, type SNSClient } from '@aws-sdk/client-sns';
import type { FitCheck } from './quotas-fit';

const SETTLED = /^(CREATE|UPDATE|IMPORT)_COMPLETE$/;
/** The endpoints NetworkConstruct deploys (ECR API, ECR registry, CloudWatch Logs). */
const INTERFACE_ENDPOINTS = 3;

export async function checkStackHealth(cfn: CloudFormationClient, sns: SNSClient, stackName: string): Promise<FitCheck[]> {
  const { Stacks } = await cfn.send(new DescribeStacksCommand({ StackName: stackName }));
  const stack = Stacks?.[0];
  if (!stack) throw new Error(`stack ${stackName}: CloudFormation describes no such stack`);
  const status = stack.StackStatus ?? 'UNKNOWN';
  const checks: FitCheck[] = [
    {
      what: `stack ${stackName} settled (${status})`,
      need: 1,
      allowed: SETTLED.test(status) ? 1 : 0,
      ok: SETTLED.test(status),
      severity: 'fail',
      advice: 'wait for the deploy to finish, or read its events: aws cloudformation describe-stack-events',
    },
  ];
  const { StackResources } = await cfn.send(new DescribeStackResourcesCommand({ StackName: stackName }));
  const endpoints = (StackResources ?? []).filter((r) => r.ResourceType === 'AWS::EC2::VPCEndpoint' && SETTLED.test(r.ResourceStatus ?? ''));
  checks.push({
    what: 'interface endpoints (ECR API, ECR registry, Logs): shard tasks pull the image and write logs through them',
    need: INTERFACE_ENDPOINTS,
    allowed: endpoints.length,
    ok: endpoints.length >= INTERFACE_ENDPOINTS,
    severity: 'fail',
    advice: 'the stack is parked (rcb:interfaceEndpoints=false): deploy with rcb:interfaceEndpoints=true before a run',
  });
  const topicArn = stack.Outputs?.find((o) => o.OutputKey === 'AlarmTopicArn')?.OutputValue;
  if (!topicArn)
    return [
      ...checks,
      { what: 'alarm topic (output AlarmTopicArn)', need: 1, allowed: 0, ok: false, severity: 'warn', advice: 'the stack has no AlarmTopicArn output' },
    ];
  const subscriptions = [];
  let next: string | undefined;
  do {
    const page = await sns.send(new ListSubscriptionsByTopicCommand({ TopicArn: topicArn, NextToken: next }));
    subscriptions.push(...(page.Subscriptions ?? []));
    next = page.NextToken;
  } while (next);
  // A pending subscription's ARN is the word PendingConfirmation.
  const confirmed = subscriptions.filter((s) => s.SubscriptionArn?.startsWith('arn:')).length;
  const pending = subscriptions.length - confirmed;
  checks.push({
    what: `a confirmed subscription to the alarm topic (${confirmed} confirmed, ${pending} pending)`,
    need: 1,
    allowed: confirmed,
    ok: confirmed > 0,
    severity: 'warn',
    advice: pending
      ? 'follow the link in the e-mail SNS sent (rcb:alarmEmail): until then no alarm reaches anyone'
      : `no one is told of an alarm: set rcb:alarmEmail, or subscribe a pager or chat integration to ${topicArn}`,
  });
  return checks;
}
