import { Duration, Stack } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { DefaultDashboardFactory, MonitoringFacade, noopAction, notifySns } from 'cdk-monitoring-constructs';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';

/** A provider lane to alarm on: its queue and its dead-letter queue. */
export interface MonitoredLane {
  /** The lane's name, in alarm and dashboard names (`lane-<name>`). */
  readonly name: string;
  readonly queue: sqs.IQueue;
  readonly deadLetterQueue: sqs.IQueue;
}

export interface MonitoringConstructProps {
  /** Provider lanes whose DLQ depth and oldest message age are alarmed on. */
  readonly lanes: readonly MonitoredLane[];
  /** Functions whose errors and throttles are alarmed on, with a human-readable name each. */
  readonly functions: ReadonlyArray<{ readonly name: string; readonly fn: lambda.IFunction }>;
  /** The run workflow, alarmed on failed and timed-out executions. */
  readonly stateMachine: sfn.IStateMachine;
  /**
   * Address that receives alarm notifications through an SNS topic; no topic without it.
   * @default - no topic, alarms only show on the dashboard and in the console
   */
  readonly alarmEmail?: string;
  /**
   * Age of a lane's oldest message after which generation counts as stuck. A large sweep
   * behind a low lane concurrency can legitimately queue for hours; raise it for those.
   * @default Duration.hours(6)
   */
  readonly maxMessageAge?: Duration;
  /**
   * Prefix of alarm and dashboard names (unique per account and region).
   * @default the stack name
   */
  readonly namePrefix?: string;
}

/**
 * Alarms on the signals that mean a run is broken or stuck (DLQ depth, oldest message age,
 * failed and timed-out executions, Lambda errors and throttles) and one dashboard, built
 * with cdk-monitoring-constructs' facade. Alarms publish to an optional SNS topic.
 */
export class MonitoringConstruct extends Construct {
  public readonly facade: MonitoringFacade;
  public readonly alarmTopic?: sns.Topic;
  public readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: MonitoringConstructProps) {
    super(scope, id);
    const prefix = props.namePrefix ?? Stack.of(this).stackName;

    if (props.alarmEmail) {
      this.alarmTopic = new sns.Topic(this, 'AlarmTopic', { displayName: `${prefix} alarms`, enforceSSL: true });
      this.alarmTopic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
      NagSuppressions.addResourceSuppressions(this.alarmTopic, [
        {
          id: 'AwsSolutions-SNS2',
          reason:
            "Alarm notifications carry alarm names and states only. CloudWatch cannot publish to a topic encrypted with the AWS managed SNS key, and a customer managed key would be the stack's only KMS cost ($1/month).",
        },
      ]);
      NagSuppressions.addResourceSuppressions(
        this.alarmTopic,
        [
          {
            id: 'Serverless-SNSRedrivePolicy',
            reason: 'An e-mail subscription: SNS retries delivery itself, and an undelivered alarm stays in ALARM on the dashboard.',
          },
        ],
        true,
      );
    }

    const dashboardFactory = new DefaultDashboardFactory(this, 'Dashboards', {
      dashboardNamePrefix: prefix,
      createDashboard: true,
      createSummaryDashboard: false,
      createAlarmDashboard: false,
    });
    this.facade = new MonitoringFacade(this, 'Facade', {
      alarmFactoryDefaults: {
        alarmNamePrefix: prefix,
        actionsEnabled: true,
        action: this.alarmTopic ? notifySns(this.alarmTopic) : noopAction(),
        datapointsToAlarm: 1,
      },
      metricFactoryDefaults: {},
      dashboardFactory,
    });

    const maxAgeSec = (props.maxMessageAge ?? Duration.hours(6)).toSeconds();
    for (const lane of props.lanes) {
      this.facade.monitorSqsQueueWithDlq({
        queue: lane.queue,
        deadLetterQueue: lane.deadLetterQueue,
        humanReadableName: `Lane ${lane.name}`,
        alarmFriendlyName: `lane-${lane.name}`,
        addDeadLetterQueueMaxSizeAlarm: { Critical: { maxMessageCount: 0 } },
        addQueueMaxMessageAgeAlarm: { Warning: { maxAgeInSeconds: maxAgeSec } },
      });
    }

    this.facade.monitorStepFunction({
      stateMachine: props.stateMachine,
      humanReadableName: 'Run workflow',
      alarmFriendlyName: 'run-workflow',
      addFailedExecutionCountAlarm: { Critical: { maxErrorCount: 0 } },
      addTimedOutExecutionCountAlarm: { Critical: { maxErrorCount: 0 } },
    });

    for (const { name, fn } of props.functions) {
      this.facade.monitorLambdaFunction({
        lambdaFunction: fn,
        humanReadableName: `Function ${name}`,
        alarmFriendlyName: `fn-${name}`,
        addFaultCountAlarm: { Critical: { maxErrorCount: 0 } },
        addThrottlesCountAlarm: { Warning: { maxErrorCount: 0 } },
      });
    }

    const dashboard = dashboardFactory.createdDashboard();
    if (!dashboard) throw new Error('rcb monitoring: the dashboard factory created no dashboard');
    this.dashboard = dashboard;
  }

  /** Every alarm the facade created, for tests and for composing further alarms. */
  public alarms(): cloudwatch.AlarmBase[] {
    return this.facade.createdAlarms().map((a) => a.alarm);
  }
}
