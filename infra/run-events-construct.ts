import { ArnFormat, Stack } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { RUN_ENDED_EVENT } from '../core/cloud/run-events';

export interface RunEventsConstructProps {
  /** The functions that end a run (Aggregate, MarkRunFailed): each may put the run-ended event on the bus. */
  readonly publishers: lambda.Function[];
  /** The topic that receives each event's one-line summary (the stack's alarm topic). */
  readonly summaryTopic: sns.ITopic;
  /**
   * The bus the events go to.
   * @default 'default', the account's default bus, where a team's own rules see them
   */
  readonly busName?: string;
}

/**
 * The run-ended event (core/cloud/run-events.ts): the functions that end a run put it on the
 * default bus, `source: rcb` only, and a rule of the stack sends its one-line summary to the
 * alarm topic. A team adds its own rules on the same pattern (docs/cloud.md#run-events).
 */
export class RunEventsConstruct extends Construct {
  /** The rule routing each run-ended event's summary to the topic. */
  public readonly summaryRule: events.Rule;
  /** The event pattern a team's rule copies. */
  public readonly eventPattern: events.EventPattern = { source: [RUN_ENDED_EVENT.source], detailType: [RUN_ENDED_EVENT.detailType] };

  constructor(scope: Construct, id: string, props: RunEventsConstructProps) {
    super(scope, id);
    const busName = props.busName ?? 'default';
    const busArn = Stack.of(this).formatArn({ service: 'events', resource: 'event-bus', resourceName: busName, arnFormat: ArnFormat.SLASH_RESOURCE_NAME });
    for (const fn of props.publishers) {
      fn.addEnvironment('RCB_EVENT_BUS', busName);
      fn.addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['events:PutEvents'],
          resources: [busArn],
          // Only rcb's own event: a function cannot pose as another source on the team's bus.
          conditions: { StringEquals: { 'events:source': RUN_ENDED_EVENT.source, 'events:detail-type': RUN_ENDED_EVENT.detailType } },
        }),
      );
    }
    this.summaryRule = new events.Rule(this, 'RunEndedRule', {
      description: 'rcb: a run ended; its one-line summary to the alarm topic',
      eventPattern: this.eventPattern,
    });
    this.summaryRule.addTarget(new targets.SnsTopic(props.summaryTopic, { message: events.RuleTargetInput.fromEventPath('$.detail.summary') }));
    NagSuppressions.addResourceSuppressions(this.summaryRule, [
      {
        id: 'Serverless-EventBusDLQ',
        reason: 'The summary is a notification: the run, its status and its reports are in the table and the bucket whether or not the topic receives it.',
      },
    ]);
  }
}
