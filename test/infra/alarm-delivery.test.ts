import { type Statement, flatten, resourcesOfType, sharedStack } from './helpers';

/**
 * Would CloudWatch's publish of each alarm reach its topic? Reads the synthesized stack as IAM
 * would: the topic's policy must allow cloudwatch.amazonaws.com to sns:Publish for that alarm's
 * ARN, and the topic's KMS key must let it kms:Decrypt and kms:GenerateDataKey (docs/cloud.md
 * "Alarm delivery").
 */
const ACCOUNT = '${AWS::AccountId}';
const REGION = '${AWS::Region}';
const PARTITION = '${AWS::Partition}';

/** An alarm's ARN as the request context carries it, in flatten()'s placeholders. */
const alarmArn = (name: string) => `arn:${PARTITION}:cloudwatch:${REGION}:${ACCOUNT}:alarm:${name}`;

/** IAM's ArnLike / StringLike: `*` any run of characters, `?` one. */
function like(pattern: string, value: string): boolean {
  const re = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${re}$`).test(value);
}

const asList = (v: unknown): string[] => (Array.isArray(v) ? v.map(flatten) : [flatten(v)]);

/** Whether `statement` allows the CloudWatch service `action` on behalf of the alarm named `name`. */
function admitsCloudWatch(statement: Statement, action: string, name: string): boolean {
  const principal = (statement.Principal as { Service?: unknown } | undefined)?.Service;
  if (statement.Effect !== 'Allow' || !principal || !asList(principal).includes('cloudwatch.amazonaws.com')) return false;
  if (!asList(statement.Action).some((a) => like(a.toLowerCase(), action.toLowerCase()))) return false;
  const cond = (statement.Condition ?? {}) as Record<string, Record<string, unknown>>;
  // Both keys are required: a statement without them would admit any account's alarms.
  const account = cond.StringEquals?.['aws:SourceAccount'];
  const source = cond.ArnLike?.['aws:SourceArn'] ?? cond.ArnEquals?.['aws:SourceArn'];
  if (account === undefined || source === undefined) return false;
  return asList(account).includes(ACCOUNT) && asList(source).some((p) => like(p, alarmArn(name)));
}

describe('alarm delivery in the synthesized stack', () => {
  const { template } = sharedStack();
  const alarms = Object.values(resourcesOfType(template, 'AWS::CloudWatch::Alarm'));
  const topics = resourcesOfType(template, 'AWS::SNS::Topic');
  const topicPolicies = Object.values(resourcesOfType(template, 'AWS::SNS::TopicPolicy'));
  const keys = resourcesOfType(template, 'AWS::KMS::Key');

  const topicStatements = (topicId: string): Statement[] =>
    topicPolicies
      .filter((p) => ((p.Properties?.Topics ?? []) as Array<{ Ref?: string }>).some((t) => t.Ref === topicId))
      .flatMap((p) => (p.Properties?.PolicyDocument.Statement ?? []) as Statement[]);

  const keyStatements = (topicId: string): Statement[] => {
    const keyId = topics[topicId]?.Properties?.KmsMasterKeyId?.['Fn::GetAtt']?.[0] as string | undefined;
    return keyId ? (keys[keyId].Properties?.KeyPolicy.Statement as Statement[]) : [];
  };

  it('has alarms, each with a topic action', () => {
    expect(alarms.length).toBeGreaterThan(20);
    for (const a of alarms) expect(a.Properties?.AlarmActions?.length).toBeGreaterThan(0);
  });

  it("lets CloudWatch publish each alarm to its action's topic (topic policy and KMS key)", () => {
    const refused: string[] = [];
    for (const alarm of alarms) {
      const name = flatten(alarm.Properties?.AlarmName);
      for (const action of (alarm.Properties?.AlarmActions ?? []) as Array<{ Ref: string }>) {
        if (!topicStatements(action.Ref).some((s) => admitsCloudWatch(s, 'sns:Publish', name))) refused.push(`${name}: topic policy`);
        const key = keyStatements(action.Ref);
        for (const kmsAction of ['kms:Decrypt', 'kms:GenerateDataKey']) {
          if (key.length > 0 && !key.some((s) => admitsCloudWatch(s, kmsAction, name))) refused.push(`${name}: key ${kmsAction}`);
        }
      }
    }
    expect(refused).toEqual([]);
  });

  it('still lets EventBridge publish the shard-task failure events', () => {
    const ruleTargets = Object.values(resourcesOfType(template, 'AWS::Events::Rule')).flatMap((r) => r.Properties?.Targets ?? []);
    const topicTarget = ruleTargets.find((t: { Arn: { Ref?: string } }) => t.Arn.Ref && topics[t.Arn.Ref]);
    expect(topicTarget).toBeDefined();
    const events = topicStatements(topicTarget.Arn.Ref).filter((s) =>
      asList((s.Principal as { Service?: unknown })?.Service ?? []).includes('events.amazonaws.com'),
    );
    expect(events.flatMap((s) => asList(s.Action))).toContain('sns:Publish');
  });
});
