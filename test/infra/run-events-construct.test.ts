/**
 * The run-ended event in the synthesized stack: the two functions that end a run may put it on
 * the default bus (rcb's source and detail type only) and are told the bus, and a rule sends
 * its one-line summary to the alarm topic.
 */
import { Match } from 'aws-cdk-lib/assertions';
import { RUN_ENDED_EVENT } from '../../core/cloud/run-events';
import { flatten, resourcesOfType, roleStatements, sharedStack } from './helpers';

const { template } = sharedStack();

/** The functions whose Powertools service is rcb-<stage>, by stage. */
function functionOf(stage: string): { id: string; props: Record<string, any> } {
  const found = Object.entries(resourcesOfType(template, 'AWS::Lambda::Function')).filter(
    ([, r]) => r.Properties?.Environment?.Variables?.POWERTOOLS_SERVICE_NAME === `rcb-${stage}`,
  );
  if (found.length !== 1) throw new Error(`expected one function of rcb-${stage}, found ${found.length}`);
  return { id: found[0][0], props: found[0][1].Properties! };
}

describe('run-ended events', () => {
  it.each(['aggregate', 'mark-failed'])('%s may put rcb’s event on the default bus, and only that', (stage) => {
    const fn = functionOf(stage);
    expect(fn.props.Environment.Variables.RCB_EVENT_BUS).toBe('default');
    const role = (fn.props.Role as { 'Fn::GetAtt': string[] })['Fn::GetAtt'][0];
    const puts = roleStatements(template, role).filter((s) => [s.Action].flat().includes('events:PutEvents'));
    expect(puts.map((s) => [s.Effect, flatten(s.Resource), s.Condition])).toEqual([
      [
        'Allow',
        'arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:event-bus/default',
        { StringEquals: { 'events:source': RUN_ENDED_EVENT.source, 'events:detail-type': RUN_ENDED_EVENT.detailType } },
      ],
    ]);
  });

  it('no other function may put events', () => {
    const others = Object.entries(resourcesOfType(template, 'AWS::IAM::Policy')).filter(([, p]) =>
      (p.Properties!.PolicyDocument.Statement as Array<{ Action: string | string[] }>).some((s) => [s.Action].flat().includes('events:PutEvents')),
    );
    const allowed = new Set(['aggregate', 'mark-failed'].map((s) => (functionOf(s).props.Role as { 'Fn::GetAtt': string[] })['Fn::GetAtt'][0]));
    for (const [, p] of others) expect((p.Properties!.Roles as Array<{ Ref: string }>).every((r) => allowed.has(r.Ref))).toBe(true);
  });

  it("routes each event's one-line summary to the alarm topic", () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: { source: [RUN_ENDED_EVENT.source], 'detail-type': [RUN_ENDED_EVENT.detailType] },
      Targets: [Match.objectLike({ Arn: { Ref: Match.stringLikeRegexp('^MonitoringAlarmTopic') }, InputPath: '$.detail.summary' })],
    });
  });
});
