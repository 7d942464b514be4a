import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as ecs from 'aws-cdk-lib/aws-ecs';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { DefaultDashboardFactory, MonitoringFacade, notifySns } from 'cdk-monitoring-constructs';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';

/** A provider lane to alarm on: its queue and its dead-letter queue. */
export interface MonitoredLane {
  /** The lane's name, in alarm and dashboard names (`lane-<name>`). */
  readonly name: string;
  readonly queue: sqs.IQueue;
  readonly deadLetterQueue: sqs.IQueue;
}

/** Namespace of the functions' custom metrics (POWERTOOLS_METRICS_NAMESPACE of RcbFunction). */
export const RCB_METRICS_NAMESPACE = 'rcb';

/**
 * The custom metrics the alarms watch, each as a function publishes it: Powertools Metrics
 * adds a `service` dimension (the function's serviceName in app/stages/*.ts), so an alarm
 * watches the metric of that one service.
 */
export const CUSTOM_ALARM_METRICS = {
  /** check-progress: the largest share of its budget a generating run has spent, percent. */
  budgetSpent: { service: 'check-progress', metricName: 'BudgetSpentPercent' },
  /** check-progress: the spend the run is on course for when every task is settled, percent of its budget. */
  budgetProjected: { service: 'check-progress', metricName: 'BudgetProjectedPercent' },
  /** check-progress: settled tasks whose model call failed for good, read from the run store's counters. */
  tasksFailed: { service: 'check-progress', metricName: 'TasksFailed' },
  /** check-progress: runs whose generation passed its deadline (they go to MarkRunFailed). */
  runsPastDeadline: { service: 'check-progress', metricName: 'RunsPastGenerationDeadline' },
  /** dead-letter: dead letters settled as failed completions in the store. */
  tasksDeadLettered: { service: 'dead-letter', metricName: 'Tasks_dead_lettered_settled' },
  /** generate: model calls stopped at the invocation deadline (SQS redelivers them). */
  tasksStoppedAtDeadline: { service: 'generate', metricName: 'Tasks_stopped_at_deadline' },
} as const;

export interface MonitoringConstructProps {
  /** Provider lanes whose DLQ depth and oldest message age are alarmed on. */
  readonly lanes: readonly MonitoredLane[];
  /** Functions whose errors and throttles are alarmed on, with a human-readable name each. */
  readonly functions: ReadonlyArray<{ readonly name: string; readonly fn: lambda.IFunction }>;
  /** The run workflow, alarmed on failed and timed-out executions. */
  readonly stateMachine: sfn.IStateMachine;
  /** The run table, alarmed on read and write throttles. */
  readonly table?: dynamodb.ITable;
  /** The evaluation cluster: shard tasks that fail to start or exit non-zero are alarmed on (EventBridge task-state events). */
  readonly cluster?: ecs.ICluster;
  /**
   * Address subscribed to the alarm topic. The topic (KMS-encrypted) exists either way, so
   * a team can subscribe a chat integration or a pager to it.
   * @default - no subscription
   */
  readonly alarmEmail?: string;
  /**
   * Age of a lane's oldest message after which generation counts as stuck. A large sweep
   * behind a low lane concurrency can legitimately queue for hours; raise it for those.
   * @default Duration.hours(6)
   */
  readonly maxMessageAge?: Duration;
  /**
   * Share of a run's budget, percent, whose spending raises the budget alarm.
   * @default 80
   */
  readonly budgetAlarmPercent?: number;
  /**
   * Prefix of alarm and dashboard names (unique per account and region).
   * @default the stack name
   */
  readonly namePrefix?: string;
}

/**
 * Alarms on the signals that mean a run is broken, stuck or overspending (DLQ depth, oldest
 * message age, failed and timed-out executions, Lambda errors and throttles, budget spent
 * and projected, failed and dead-lettered tasks counted from the store, model calls stopped
 * at a deadline, failed shard tasks, table throttles) and one dashboard, built with
 * cdk-monitoring-constructs' facade. Every alarm publishes to one SNS topic encrypted with
 * a customer managed KMS key (CloudWatch cannot use the AWS managed SNS key).
 */
export class MonitoringConstruct extends Construct {
  public readonly facade: MonitoringFacade;
  public readonly alarmTopic: sns.Topic;
  public readonly alarmKey: kms.Key;
  public readonly dashboard: cloudwatch.Dashboard;
  /** The alarms created besides the facade's (custom metrics, table, shard tasks). */
  public readonly customAlarms: cloudwatch.Alarm[] = [];
  /** The EventBridge rule matching failed shard tasks, when a cluster is given. */
  public readonly taskFailureRule?: events.Rule;

  constructor(scope: Construct, id: string, props: MonitoringConstructProps) {
    super(scope, id);
    const prefix = props.namePrefix ?? Stack.of(this).stackName;

    this.alarmKey = new kms.Key(this, 'AlarmKey', {
      description: `${prefix}: encrypts the alarm topic`,
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.DESTROY,
      pendingWindow: Duration.days(7),
    });
    // CloudWatch alarms publish to the encrypted topic only if both the key and the topic admit
    // them (docs/cloud.md "Alarm delivery"); the EventBridge target grants events itself.
    const fromOurAlarms = this.fromOurAlarms(prefix);
    this.alarmKey.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'CloudWatchAlarmsPublish',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: fromOurAlarms,
      }),
    );
    this.alarmTopic = new sns.Topic(this, 'AlarmTopic', { displayName: `${prefix} alarms`, enforceSSL: true, masterKey: this.alarmKey });
    // enforceSSL writes a topic policy, which replaces SNS's default owner statement: without
    // this one, every alarm's publish is refused.
    this.alarmTopic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'CloudWatchAlarmsPublish',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [this.alarmTopic.topicArn],
        conditions: fromOurAlarms,
      }),
    );
    if (props.alarmEmail) this.alarmTopic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
    NagSuppressions.addResourceSuppressions(
      this.alarmTopic,
      [
        {
          id: 'Serverless-SNSRedrivePolicy',
          reason:
            'Subscriptions are e-mail or chat integrations the team adds: SNS retries delivery itself, and an undelivered alarm stays in ALARM on the dashboard.',
        },
      ],
      true,
    );

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
        action: notifySns(this.alarmTopic),
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

    this.addRunAlarms(prefix, props.budgetAlarmPercent ?? 80);
    if (props.table) this.addTableAlarms(prefix, props.table);
    if (props.cluster) this.taskFailureRule = this.addTaskFailureAlarm(prefix, props.cluster);

    const dashboard = dashboardFactory.createdDashboard();
    if (!dashboard) throw new Error('rcb monitoring: the dashboard factory created no dashboard');
    this.dashboard = dashboard;
    this.dashboard.addWidgets(
      new cloudwatch.AlarmStatusWidget({
        title: 'Run alarms',
        alarms: this.customAlarms,
        width: 24,
        height: Math.max(2, Math.ceil(this.customAlarms.length / 4) + 1),
      }),
    );
  }

  /**
   * Conditions that admit CloudWatch only on behalf of this stack's alarms (every alarm name
   * starts with the prefix), against the confused deputy.
   */
  private fromOurAlarms(prefix: string): Record<string, Record<string, string>> {
    const stack = Stack.of(this);
    return {
      StringEquals: { 'aws:SourceAccount': stack.account },
      ArnLike: { 'aws:SourceArn': `arn:${stack.partition}:cloudwatch:${stack.region}:${stack.account}:alarm:${prefix}*` },
    };
  }

  /** One alarm on `metric` above `threshold`, to the topic. */
  private alarm(id: string, name: string, description: string, metric: cloudwatch.IMetric, threshold: number): cloudwatch.Alarm {
    const alarm = new cloudwatch.Alarm(this, id, {
      alarmName: name,
      alarmDescription: description,
      metric,
      threshold,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      datapointsToAlarm: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    alarm.addAlarmAction(new cwActions.SnsAction(this.alarmTopic));
    this.customAlarms.push(alarm);
    return alarm;
  }

  /** Alarms on what the functions count from the run store (custom metrics of app/stages/*). */
  private addRunAlarms(prefix: string, budgetPercent: number): void {
    const custom = (m: { service: string; metricName: string }, statistic: string) =>
      new cloudwatch.Metric({
        namespace: RCB_METRICS_NAMESPACE,
        metricName: m.metricName,
        dimensionsMap: { service: m.service },
        statistic,
        period: Duration.minutes(5),
      });
    const M = CUSTOM_ALARM_METRICS;
    this.alarm(
      'BudgetSpentAlarm',
      `${prefix}-run-budget-spent`,
      `A generating run has spent more than ${budgetPercent}% of its budget.`,
      custom(M.budgetSpent, 'Maximum'),
      budgetPercent,
    );
    this.alarm(
      'BudgetProjectedAlarm',
      `${prefix}-run-budget-projected`,
      'At its spend rate so far, a generating run will exhaust its budget before every task is answered (projected spend above 100%).',
      custom(M.budgetProjected, 'Maximum'),
      100,
    );
    this.alarm(
      'TasksFailedAlarm',
      `${prefix}-run-tasks-failed`,
      'A run has tasks whose model call failed for good (counted in the run store).',
      custom(M.tasksFailed, 'Maximum'),
      0,
    );
    this.alarm(
      'TasksDeadLetteredAlarm',
      `${prefix}-run-tasks-dead-lettered`,
      'Generation messages exhausted their deliveries and were settled as failed tasks.',
      custom(M.tasksDeadLettered, 'Sum'),
      0,
    );
    this.alarm(
      'TasksStoppedAtDeadlineAlarm',
      `${prefix}-run-tasks-stopped-at-deadline`,
      'Model calls were stopped at the generator invocation deadline (raise rcb:generatorTimeoutSec if this repeats).',
      custom(M.tasksStoppedAtDeadline, 'Sum'),
      0,
    );
    this.alarm(
      'RunsPastDeadlineAlarm',
      `${prefix}-run-generation-deadline`,
      'A run passed its generation deadline with unanswered tasks and was marked failed.',
      custom(M.runsPastDeadline, 'Sum'),
      0,
    );
  }

  /** Read and write throttles of the run table (on-demand tables throttle too, above their account limits). */
  private addTableAlarms(prefix: string, table: dynamodb.ITable): void {
    for (const [id, metricName, what] of [
      ['TableReadThrottleAlarm', 'ReadThrottleEvents', 'read'],
      ['TableWriteThrottleAlarm', 'WriteThrottleEvents', 'write'],
    ] as const) {
      const metric = new cloudwatch.Metric({
        namespace: 'AWS/DynamoDB',
        metricName,
        dimensionsMap: { TableName: table.tableName },
        statistic: 'Sum',
        period: Duration.minutes(5),
      });
      this.alarm(id, `${prefix}-table-${what}-throttles`, `The run table throttled ${what} requests.`, metric, 0);
    }
  }

  /**
   * Shard tasks that failed to start or whose evaluator exited non-zero, from ECS task-state
   * change events on EventBridge (no Container Insights needed): the rule sends each event to
   * the topic, and its TriggeredRules metric raises an alarm.
   */
  private addTaskFailureAlarm(prefix: string, cluster: ecs.ICluster): events.Rule {
    const rule = new events.Rule(this, 'ShardTaskFailureRule', {
      description: 'rcb: a shard task failed to start or its evaluator exited non-zero',
      eventPattern: {
        source: ['aws.ecs'],
        detailType: ['ECS Task State Change'],
        detail: {
          clusterArn: [cluster.clusterArn],
          lastStatus: ['STOPPED'],
          $or: [{ stopCode: ['TaskFailedToStart'] }, { containers: { exitCode: [{ 'anything-but': 0 }] } }],
        },
      },
    });
    rule.addTarget(
      new targets.SnsTopic(this.alarmTopic, {
        message: events.RuleTargetInput.fromText(
          `rcb shard task ${events.EventField.fromPath('$.detail.taskArn')} stopped (${events.EventField.fromPath('$.detail.stopCode')}): ${events.EventField.fromPath('$.detail.stoppedReason')}`,
        ),
      }),
    );
    NagSuppressions.addResourceSuppressions(rule, [
      {
        id: 'Serverless-EventBusDLQ',
        reason:
          'The target is the alarm topic; an event EventBridge fails to deliver there still counts in TriggeredRules, whose alarm stays in ALARM on the dashboard.',
      },
    ]);
    const metric = new cloudwatch.Metric({
      namespace: 'AWS/Events',
      metricName: 'TriggeredRules',
      dimensionsMap: { RuleName: rule.ruleName },
      statistic: 'Sum',
      period: Duration.minutes(5),
    });
    this.alarm('ShardTaskFailureAlarm', `${prefix}-shard-task-failures`, 'Shard tasks failed to start or exited non-zero (ECS task-state events).', metric, 0);
    return rule;
  }

  /** Every alarm of the stack's monitoring: the facade's and the custom ones. */
  public alarms(): cloudwatch.AlarmBase[] {
    return [...this.facade.createdAlarms().map((a) => a.alarm), ...this.customAlarms];
  }
}
